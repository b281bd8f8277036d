// Package verceltest is a fake Vercel Sandbox API on loopback, for
// tests: the REST routes the official client calls (sandboxes, sessions,
// commands with their NDJSON log streams, files as gzipped tars, the
// interactive PTY over a websocket), with real processes behind them.
// Each sandbox is a directory of this machine; its commands run there,
// each in a process group of its own, with only the sandbox's base
// environment; stopping a session kills every one of its processes.
//
// Like the real API it checks the bearer token and the team on every
// call and the project where one is named, and answers errors as
// {"error": {"code", "message"}}. It is not a security boundary: the
// sandbox's processes run as the test's user on this machine.
//
// # Routes
//
// Sandboxes: POST /v2/sandboxes and /v3/sandboxes (create), GET and
// DELETE /v2/sandboxes/{name} (resume=true starts a stopped one again:
// in the same directory when it is persistent, a fresh one otherwise),
// GET /v2/sandboxes. Sessions, under /v2/sandboxes/sessions/{id}: GET,
// stop, extend-timeout, network-policy (stored, not enforced), cmd (with
// wait=true an NDJSON stream: the command, its output lines, the
// finished command — or an error line when the session stops under it),
// cmd/{cmd} (wait=true), cmd/{cmd}/logs, cmd/{cmd}/kill, fs/write (a
// gzipped tar, x-cwd), fs/read, fs/mkdir, interactive (a one-use token
// for the PTY websocket at /interactive/{id}). A session stops at its
// timeout (Vercel's default, 5 minutes, when the create call gives
// none). [Server.StopSandbox] stops one as Vercel would behind the
// client's back.
package verceltest
