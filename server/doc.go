// Package server is `runbox serve`: runbox as a Model Context Protocol
// server, built on the official Go SDK (github.com/modelcontextprotocol/go-sdk)
// and written as a thin layer over the application core ([service]).
//
// contract:
//
//   - terminal: run a shell command in the client's session, in the
//     foreground (the bounded output and the result object of
//     `runbox run --json`) or in the background (a job id and a pid at
//     once);
//   - process: list, poll, log, wait, kill, write, submit, close and
//     handoff the session's background jobs;
//   - execute_code: Python in the session's persistent kernel ([kernel]),
//     with runbox.terminal and runbox.process callable from the code
//     (each command gated as if the client had called the tool);
//   - check_command: the gate's verdict on a command, without running it;
//   - sync, only with [Options.Sync]: push the local project to the task's
//     workspace (done before every foreground command anyway) or diff
//     what the commands changed there. It never applies: changes reach
//     the user's files only through `runbox sync apply`.
//
// # Sessions
//
// Every MCP session gets a [service.Session] of its own: an environment on
// the configured backend, opened by its first command and kept across
// calls (cd and export carry over), torn down with its whole process tree
// when the client ends the session or goes away. Background jobs are
// registered in the per-user job registry under the session's name; the
// ones it started are killed when it ends, unless they were started with
// detach or handed to another owner. Two sessions never see each other's
// shell state or jobs. Over HTTP the teardown starts as soon as the
// client's DELETE arrives, before the SDK's own close (which waits for
// the calls in progress): a foreground command still running is killed
// with its tree, and the DELETE returns once nothing of the session is
// left. One session serves parallel tool calls; each gets its own output
// whole.
//
// # The gate
//
// Every command and every write to a job's stdin passes the command gate
// first ([service.Session.Run], [service.OwnedJobs]). A hardline command is
// a tool error that says why. A command that needs approval is put to
// the human through MCP elicitation when the client declared that
// capability (one question; identical concurrent questions are asked
// once, through an [approval.Broker]); otherwise, or when the human
// declines, cancels or does not answer in time, it is a tool error that
// names the rule ids and how to allow them.
//
// # Notifications
//
// A session's job events (completion, exactly once; heartbeats; watch
// matches) are sent to its client as MCP log-message notifications
// (notifications/message) whose data carries a readable line and the
// event itself. The server starts every session at log level "info", so
// a client that never sends logging/setLevel still receives them; a
// client that raises the level above the events' levels opts out. An
// event that cannot be delivered (an HTTP client with no stream open)
// stays queued and is returned by the next process list or poll.
//
// # Protocol versions
//
// The server speaks the session-based protocol versions (up to
// 2025-11-25). The sessionless protocol of 2026-07-28 forbids the
// server-initiated requests and notifications that sessions, elicitation
// mid-call and job notifications rely on; a client that asks for it is
// answered with the newest session-based version.
//
// # Transports
//
// [Server.ServeStdio] serves one client over a pair of streams.
// [Server.HTTPHandler] is the streamable HTTP transport at /mcp; over TCP
// every request must carry the bearer token, and Host and Origin are
// checked against DNS rebinding ([HTTPOptions]). [ListenTCP] refuses a
// non-loopback address without an explicitly provisioned token;
// [ListenUnix] accepts only connections from this user (peer uid).
//
// # What it does not do
//
// It runs background jobs only through the local job registry: a session
// on another backend is told that background jobs are unsupported there.
// It does not put a cell of execute_code to the gate: the code runs with
// the session environment's own confinement, and only the commands it
// runs through runbox.terminal are judged.
package server
