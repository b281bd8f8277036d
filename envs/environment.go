package envs

import (
	"context"
	"io"
	"os"
	"syscall"
)

// Environment is a place where commands run: this machine, a container,
// a remote host, a cloud sandbox. Every implementation is safe for
// concurrent use; commands on one Environment share its session state
// (see [Command.Shell]).
type Environment interface {
	// Run runs cmd to completion and captures its output. A non-zero exit
	// is not an error: it is in the Result. The error is for failures to
	// run at all (bad command, closed environment, backend gone).
	// Cancelling ctx kills the command's tree and yields exit 130.
	Run(ctx context.Context, cmd Command) (*Result, error)
	// Start starts cmd and returns at once with a streaming Process.
	// ctx bounds only the start; the process lives until it exits or is
	// killed (cmd.Timeout still applies).
	Start(ctx context.Context, cmd Command) (Process, error)
	// Capabilities reports what the backend enforces.
	Capabilities() Capabilities
	// Close kills every command still running and releases the
	// environment. Later calls fail with ErrClosed.
	Close(ctx context.Context) error
}

// Process is a started command.
type Process interface {
	// PID is the process id of the command in its own environment
	// (0 where the backend has none).
	PID() int
	// Stdin writes to the command's standard input; closing it sends EOF.
	// It is nil when the command was started with a Command.Stdin reader.
	Stdin() io.WriteCloser
	// Output streams stdout+stderr interleaved (stdout alone with
	// SeparateStreams). It reaches EOF when the command has exited and its
	// direct output is drained; a grandchild holding the pipe does not
	// keep it open past the grace period. As with os/exec pipes, the
	// caller must read it (or Kill the process): output nobody reads
	// eventually blocks the command, and Wait with it.
	Output() io.Reader
	// Stderr streams stderr with SeparateStreams, nil otherwise.
	Stderr() io.Reader
	// Signal sends sig to the command's process (not its tree). ctx bounds
	// the delivery (a remote backend's round trip), not the process.
	Signal(ctx context.Context, sig syscall.Signal) error
	// Kill tears down the whole tree (parent first, then survivors, then
	// SIGKILL). It returns a *SurvivorsError if anything outlived it.
	Kill(ctx context.Context) error
	// Resize changes the PTY size; ErrUnsupported without a PTY. ctx
	// bounds the delivery.
	Resize(ctx context.Context, size WindowSize) error
	// Wait waits for the exit and returns the status. Cancelling ctx stops
	// the wait, not the process. Like os/exec's Cmd.Wait, it returns once
	// the process has exited and its output is drained, whether or not
	// Stdin was closed: a process that exits without reading its input
	// does not wait for the caller to close it, and a later write to
	// Stdin fails (it never blocks forever).
	Wait(ctx context.Context) (ExitStatus, error)
}

// FileTransfer is implemented by environments that can copy files in and out.
type FileTransfer interface {
	// PutFile writes r to path inside the environment with mode perm,
	// creating parent directories.
	PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error
	// GetFile opens path inside the environment for reading.
	GetFile(ctx context.Context, path string) (io.ReadCloser, error)
}

// Waker is implemented by environments whose provider stops the sandbox
// by its own idle clock, which does not count what runs inside (Daytona's
// auto-stop): KeepAwake(ctx, true) turns that clock off while a job that
// must not be stopped runs, KeepAwake(ctx, false) gives it back. Calls
// that change nothing are no-ops; a sandbox not made yet has nothing to
// change.
type Waker interface {
	KeepAwake(ctx context.Context, on bool) error
}

// TreeTransfer is implemented by environments that can move a whole
// directory tree as one tar stream, which is much cheaper than a call per
// file when a workspace is copied in for the first time.
type TreeTransfer interface {
	// PutTree unpacks the tar stream r into dir inside the environment
	// (creating dir when missing). Entry names are relative to dir; an
	// entry that is absolute or climbs out of dir is refused.
	PutTree(ctx context.Context, dir string, r io.Reader) error
	// GetTree returns dir's contents as a tar stream whose entry names are
	// relative to dir ("a/b.txt"). The caller closes it.
	GetTree(ctx context.Context, dir string) (io.ReadCloser, error)
}
