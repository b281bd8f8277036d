// Package server is `runbox serve`: runbox as a Model Context Protocol
// server, built on the official Go SDK (github.com/modelcontextprotocol/go-sdk)
// and written as a thin layer over the application core ([service]).
//
// contract:
//
//   - terminal: run a shell command in the client's session, in the
//     foreground (the bounded output and the result object of
//     `runbox run --json`) or in the background (a job id and a pid at
//     once), or with a yield time: run as a background job from the
//     start, it returns its result if it ends within the yield (and then
//     sends no notice), else its output so far and its job id, and sends
//     one completion notice later;
//   - process: list, poll, log, wait, kill, write, submit, close and
//     handoff the session's background jobs; write, submit and poll take
//     a yield too, and return the job's output after the call began;
//   - execute_code: Python in the session's persistent kernel ([kernel]),
//     with runbox.terminal and runbox.process callable from the code
//     (each command gated as if the client had called the tool);
//   - check_command: the gate's verdict on a command, without running it;
//   - tasks: list what --task keeps on every backend, or rm one task
//     everywhere it lives ([service.Service.Tasks], RemoveTask); never the
//     task the server's own sessions run in;
//   - sync, only with [Options.Sync]: push the local project to the task's
//     workspace (done before every foreground command anyway) or diff
//     what the commands changed there. It never applies: changes reach
//     the user's files only through `runbox sync apply`.
//
// and one resource, [EventsURI]: the session's job events not yet
// delivered, taken by each read, to which a client may subscribe.
//
// # Sessions
//
// Every MCP session gets a [service.Session] of its own: an environment on
// the configured backend, opened by its first command and kept across
// calls (cd and export carry over), torn down with its whole process tree
// when the client ends the session or goes away. Background jobs are
// registered under the session's name in the registry where its commands
// run: the per-user job daemon for a local session, the job daemon inside
// the session's own container (docker) or on its own host (ssh), reached
// through the session's agent channel. The ones it started are killed
// when it ends, unless they were started with detach or handed to
// another owner. Two sessions never see each other's
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
// matches; a quiet job and a job waiting for input, once per spell, see
// the terminal tool's quiet_after, input_wait and no_output_timeout) reach
// its client by one of two channels, each event by exactly one:
//
//   - the events resource ([EventsURI], application/json), for a client
//     that subscribes to it (resources/subscribe; the server declares
//     resources with subscribe). The event waits in the session, and the
//     client is sent notifications/resources/updated, to it alone, once
//     per batch: none again until it reads. A read returns the session's
//     undelivered events as [JobEvents] and takes them; the first event
//     after a read is announced again. Unsubscribing returns the session
//     to log messages. This is the preferred channel: the SDK deprecates
//     logging as of the sessionless 2026-07-28 protocol (SEP-2577).
//   - MCP log messages (notifications/message, logger "runbox.jobs")
//     whose data is a [Notice], for a client that does not subscribe. This
//     is the compatibility path, kept because every stock client shows
//     log messages without opting in to anything, and because in every
//     protocol version the server speaks (up to 2025-11-25) logging is
//     part of the specification. The server starts every session at log
//     level "info", so a client that never sends logging/setLevel still
//     receives them; an event below the client's level is held, and sent
//     once the level is lowered.
//
// An event that cannot be delivered (an HTTP client with no stream open:
// no notification of either kind can reach it) stays queued, and is
// announced or sent once a stream is open. Whatever its channel, an event
// not yet delivered is returned by the next read of the resource or
// process list or poll, and then by nothing else: an event is delivered
// or kept, never lost, and never delivered twice.
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
// [Server.ServeStdio] serves one client over a pair of streams. A line
// that is not a JSON-RPC 2.0 message (broken JSON, another "jsonrpc", a
// batch, a line over 64 MiB) is answered with -32700 or -32600 and the
// session carries on. The end of input ends the session: the requests
// still running get [EOFGrace] to answer (none when the client is gone),
// then are cancelled and the session is torn down.
//
// On both transports a request the client cancelled
// (notifications/cancelled) is stopped and not answered.
//
// [Server.HTTPHandler] is the streamable HTTP transport at /mcp; over TCP
// every request must carry the bearer token, and Host and Origin are
// checked against DNS rebinding ([HTTPOptions]). [ListenTCP] refuses a
// non-loopback address without an explicitly provisioned token;
// [ListenUnix] accepts only connections from this user (peer uid). Where
// the SDK's handler answers otherwise, runbox's wrapper answers by the
// specification: an unknown method is -32601, a request without
// Mcp-Session-Id (other than initialize) is HTTP 400, an initialize
// beyond the session cap is HTTP 503 with a JSON-RPC error (-32000) and
// no session id. SSE streams are resumable: events carry ids, a stream
// starts with a retry: hint ([RetryHint]), and a client that reconnects
// with Last-Event-ID is sent what it missed; one that reopens its
// standalone stream without Last-Event-ID is sent only what was not
// written to it before. A session whose client has
// had no request and no stream open for [HTTPOptions.SessionIdle] is
// closed with its whole tree: a client that went away without DELETE
// leaves nothing behind.
//
// Every tool call's arguments are checked against the tool's schema
// first; a bad one is a tool error ([ArgError]) naming the field, what
// was expected and what came. logging/setLevel refuses a level the
// protocol does not define (-32602).
//
// # Where runbox departs from the SDK
//
// Each of these is done in the file named, with a comment there citing
// the SDK (go-sdk v1.8.0) function it works around:
//
//   - http.go, httpproto.go: an unknown method is -32601, a call without
//     Mcp-Session-Id is HTTP 400, the session cap refuses an initialize
//     before a session id is handed out, SSE streams start with a retry:
//     hint, idle sessions are closed by runbox (an open GET stream counts
//     as activity), a DELETE tears the session down before the SDK waits
//     for its calls, and Host, Origin and token are checked;
//   - sse.go: a standalone stream reopened without Last-Event-ID is not
//     replayed from its start, and a cancelled request is not answered;
//   - stdio.go: a bad line is answered instead of ending the connection,
//     the end of input waits [EOFGrace] before the calls are cancelled,
//     and a cancelled request is not answered;
//   - server.go, notify.go: sessions start at log level "info", a level
//     the protocol does not define is refused, only the session-based
//     protocol versions are spoken, notices below the client's level or
//     with no stream open are kept rather than counted as sent, and
//     closing the Server cancels the calls in flight;
//   - resource.go: notifications/resources/updated goes to the one
//     session whose events changed, through the SDK's sending handler,
//     not Server.ResourceUpdated (which sends to every subscribed session
//     and reports no failure);
//   - args.go, result.go: bad arguments and tool errors are reported with
//     the field and the structured error, not in the SDK's words.
//
// # What it does not do
//
// It runs no background jobs for a session whose sandbox cannot hold a
// runbox job daemon (a backend without one, or a session whose agent does
// not run, such as daytona's no_agent): the start is refused with the
// reason ([service.ErrNoSandboxJobs]).
// It does not put a cell of execute_code to the gate: the code runs with
// the session environment's own confinement, and only the commands it
// runs through runbox.terminal are judged.
package server
