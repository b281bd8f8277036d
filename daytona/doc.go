// Package daytona runs commands in Daytona sandboxes through the official
// Go SDK (github.com/daytonaio/daytona/libs/sdk-go), with the runbox agent
// inside: [New] returns a [remote.Env], so a daytona session has what
// docker, ssh and modal sessions have — session state, PTY commands,
// stdin as bytes, signals and whole-tree kill — from the shared agent
// host, which also notices a lost sandbox and recreates it on the next
// command.
//
// # The agent's stream: a raw PTY session
//
// The toolbox's one live, two-way route to a process is a PTY session: a
// login shell on a terminal, joined to a websocket whose binary messages
// carry the terminal's output and whose every message is written to the
// terminal as it is. Attaching the agent types one line into that shell: it
// sends the shell's stderr to a file beside the agent, puts the terminal
// in raw mode (stty: no echo, no CR/LF translation, no signal or flow
// control characters, all 8 bits), prints a ready marker and execs the
// agent with its stdout on /dev/tty opened again (the agent makes its
// stdin non-blocking; on the one open file the shell's descriptors share,
// that would make its stdout non-blocking too). What comes before the
// marker (motd, prompt, echo) is dropped. Every byte value passes both
// ways untouched; a terminal left cooked does not (the tests show both).
// The agent is uploaded with the toolbox's file routes (temporary name,
// chmod, rename), and a sandbox that already holds this build keeps it.
//
// A session's background jobs run in the job daemon inside the sandbox:
// before the first command that runs [remote.Env.CLIPath], the agent
// host uploads the full static runbox CLI (Options.CLIBinary) beside the
// agent, under a name that carries its digest, and the service relays to
// `runbox __relay` there. Without the agent (the fallback below) there is
// no CLI either, and background jobs are refused with the reason.
//
// Closing the stream kills the PTY session — a raw terminal has no end of
// file to send — and the toolbox kills the agent and its whole tree.
//
// # The fallback
//
// When the agent cannot run (no build for the sandbox, no writable agent
// directory, no stty, a shell that never prints the marker) or
// Options.NoAgent is set, commands run through the toolbox's session API
// instead, visibly: each Result carries a "degraded" warning and the
// capabilities say what that path cannot do (no PTY, no session state, no
// signals, stdin relayed as base64 lines, tree kill by an environment
// marker rather than the agent's process groups).
//
// # What it does not do
//
// It does not use the SDK's PtyHandle.Read (it drops what does not fit
// the caller's buffer) nor its KillPtySession's error (it fails on the
// toolbox's success answer); it reads whole messages from the handle's
// channel and judges the kill by its HTTP status.
//
// Credentials (DAYTONA_API_KEY, or DAYTONA_JWT_TOKEN with
// DAYTONA_ORGANIZATION_ID; DAYTONA_API_URL or DAYTONA_SERVER_URL;
// DAYTONA_TARGET) are read by the caller from its launch environment and
// handed over in [Credentials]; they go to Daytona's API only, never into
// a sandbox.
package daytona
