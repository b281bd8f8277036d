// Package vercel runs commands in Vercel Sandbox microVMs, speaking
// Vercel's REST API (the routes the official @vercel/sandbox client
// calls) with net/http: no SDK exists for Go.
//
// # How commands run
//
// Vercel's API has two ways in. The command route runs one program per
// call and streams its output as NDJSON, with no standard input; the
// interactive route hands out a websocket to a PTY in the sandbox, whose
// binary frames are the terminal's input and output. The runbox agent
// needs a byte stream, so it runs on the PTY: a small shell prelude sets
// the terminal raw (no echo, no line editing, no signal, flow-control or
// newline translation), reopens standard input from the terminal so the
// agent's input and output do not share one open file (see rawScript),
// says it is ready, and execs the agent with its standard error in a
// file. Everything else — session state, stdin, PTY commands, tree kill,
// timeouts, file transfer — is the agent's, through [remote.Env], so the
// backend keeps the whole contract rather than a degraded one. The
// command route serves only the host's own small steps (is the agent
// already there, make its directory); files go in as gzipped tars
// through the write route.
//
// # Sandboxes and tasks
//
// Without a task every environment gets a new sandbox, stopped and
// deleted at Close. With Options.Task the sandbox is named after the
// owner and task, and found again by name; Options.Persistent (what
// runbox run --task sets) creates it persistent, so Vercel snapshots it
// when it stops and resumes it, files and all, at the next open. A
// session Vercel stops under a running command (its timeout, the
// dashboard) fails that command with an error saying so; the next
// command provisions again (resuming or recreating) and its result says
// the environment was recreated.
//
// # Credentials
//
// VERCEL_TOKEN (or VERCEL_OIDC_TOKEN), VERCEL_TEAM_ID and
// VERCEL_PROJECT_ID are read by the caller from its launch environment
// ([CredentialsFrom]) and sent only as the Authorization header of API
// calls (with the team and project as the API's parameters): never in a
// sandbox's definition, never in a command's environment. API refusals
// become [APIError]s matching [ErrAuth], [ErrNotFound] or
// [ErrRateLimited].
//
// Package verceltest is a loopback fake of the API with real processes
// behind it, for tests.
package vercel
