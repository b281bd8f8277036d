// Package agent is runbox's wire protocol for running commands on the far
// side of a byte stream, with its server (the local backend served over
// stdin/stdout: package cmd/internal/agentd, built as the small runbox-agent
// binary and as `runbox agent`) and its client (an [envs.Environment] and
// [envs.FileTransfer]). It is how the docker backend — and later ssh,
// modal and daytona — get fast exec, real whole-tree kill, session state
// and bounded, spilled output inside a sandbox: everything package local
// guarantees, there. Package agent/remote is the host side that every such
// backend shares: deploy the agent, attach, detect loss, recreate, fall
// back.
//
// # Frames
//
// The stream carries frames: 1 byte of type, 4 bytes of channel id, 4 bytes
// of payload length (big-endian), then the payload. A payload is at most
// [MaxPayload] bytes; the decoder checks the declared length before it
// allocates, so a corrupt or hostile header costs nothing. Control
// messages (hello, call, reply, exit) are JSON; data frames are raw bytes
// after a 1-byte stream number and an 8-byte offset, which the receiver
// checks, so a lost or reordered chunk is a protocol error rather than
// silently corrupt output. Byte strings in JSON (commands, captured
// output) travel as base64, so invalid UTF-8 and NUL bytes survive.
//
// A JSON message longer than one frame — a Result carrying megabytes of
// captured output — is split into "more" frames followed by a frame of
// its own type, up to [MaxMessage] bytes. A reply that cannot be sent at
// all is replaced by an error reply: no call is ever left without its
// answer because the answer was too big.
//
// # Channels and flow control
//
// Each command, file transfer or call has its own channel id, so many run
// at once on one stream. Every data stream has a window of 256 KiB: a
// sender holds credit, spends it on data frames and gets it back only as
// the receiver's reader consumes. A reader that stops reading therefore
// stalls its own stream — and, through a full pipe, its own process —
// never the others, and neither side ever buffers more than one window
// per stream. Control frames are queued to one writer goroutine and never
// written from the reader loop, so two peers on a synchronous stream
// (net.Pipe) cannot each wait for the other to read. A sender may keep
// less than the window in flight ([ServerOptions.SendWindow]): an agent
// whose stdout is a terminal keeps 8 KiB a stream in flight and
// acknowledges what it receives in steps of 16 KiB
// ([ServerOptions.AckEvery]), since the terminal relay in between
// (Daytona's toolbox) drops a client it has had to queue too many pieces
// for.
//
// # Handshake and versions
//
// Each side sends a hello with its protocol [Version] first; the agent's
// hello carries its capabilities and build. A client refuses an agent of
// another version with a [*VersionError] (errors.As-able; it matches
// envs.ErrUnsupported): client and agent must come from one release.
//
// # Failure
//
// When the stream fails — the agent is killed, its container vanishes, the
// docker daemon restarts — every pending call, every Wait and every output
// reader fails at once with a [*LostError] (matching [ErrLost] and
// envs.ErrClosed). Nothing waits for a reply that cannot come. A malformed
// frame, a length over the limit or a truncated frame fails the stream the
// same way, with a [*ProtocolError] or io.ErrUnexpectedEOF as its cause.
// An agent that is up but does not answer costs a call at most the reply
// timeout (ClientOptions.ReplyTimeout; [ErrNoReply]), a Run whose ctx has
// ended included. The server, when its client goes away, kills every
// process the client left running.
//
// # What it does not do
//
// It does not authenticate or encrypt: the stream is assumed private (a
// docker exec attach, an ssh channel, a pipe). It does not build child
// environments itself: the served environment does, through spawn, so a
// command's secrets travel inside the protocol and never in a container's
// or process's configuration. It keeps no state between streams but one:
// change journals.
//
// # Change journals
//
// [Client.Journal] is an [envs.Journaler]: the calls journal.begin,
// journal.end, journal.steps and journal.undo make the agent keep a
// package undo journal of a workspace inside its own environment, under
// ServerOptions.StateDir (undo/ there, one journal per workspace), so a
// checkpoint walks the sandbox's disk and only the record crosses the
// stream. A journal outlives the stream that opened it: the agent that
// follows a lost one finds it on disk. Undo's refusals cross the wire as
// themselves (errors.Is undo.ErrConflict, undo.ErrNothing, …). A journal
// call is bounded by its own, longer timeout: the first checkpoint copies
// the whole workspace.
package agent
