package remote

import (
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/runbox/runbox/envs"
)

// Sandbox is what a backend supplies: one sandbox (a container, a VM, a
// remote machine, a cloud sandbox) that it can bring up, copy a file into
// and start a process in with a byte stream to it. Everything else — the
// agent, loss detection, recreation, the fallback, the capability report
// — is [Env]'s.
//
// Every method but Provision takes the id Provision returned. An [Env]
// calls Provision, CopyIn and Attach one at a time (under its setup lock);
// Describe, Release and Capabilities may run beside them.
type Sandbox interface {
	// Provision makes sure the sandbox exists and runs — creating it,
	// finding the one to reuse, starting a stopped one — and returns it.
	// It is idempotent: called again after a loss, it returns the same
	// sandbox when that still exists, a new one otherwise. It leaves
	// nothing behind when it fails: a sandbox it created on the way is
	// removed (or left for the backend's reaper, where removing fails).
	Provision(ctx context.Context) (Instance, error)
	// CopyIn writes the size bytes of src to path in the sandbox with
	// mode perm, creating the parent directories. src is read with ReadAt,
	// so a backend may read it again to retry another way. CopyIn may
	// return at once when path already holds a file of that size: the
	// host names what it deploys by content, so a same-named file of the
	// same size is that file.
	CopyIn(ctx context.Context, id, path string, src io.ReaderAt, size int64, perm fs.FileMode) error
	// Attach starts argv in the sandbox and returns a stream joined to its
	// stdin and stdout, byte for byte (no terminal, no translation).
	// Closing the stream closes the process's stdin; the process is
	// expected to exit then. A stream that also has a Stderr() string
	// method gives the process's recent standard error, which the host
	// adds to a failed handshake's error.
	Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error)
	// Describe says what became of the sandbox, for the error of a
	// command that lost it: "container 3f2a… is gone (removed)",
	// "… is exited (exit code 137)", "… is running but its agent died".
	Describe(ctx context.Context, id string) string
	// Release ends this environment's use of the sandbox at Close, or
	// when New fails after Provision: stop it, remove it, or leave it
	// running, as the backend's own options say.
	Release(ctx context.Context, id string) error
	// Capabilities lays what the sandbox itself enforces (containment,
	// limits, network policy, file transfer, host access, snapshots) over
	// caps, which holds what the agent — or the native exec — reports.
	Capabilities(caps envs.Capabilities)
}

// Instance is a provisioned sandbox.
type Instance struct {
	// ID names the sandbox to the backend (a container id, a host name).
	ID string
	// OS and Arch are the sandbox's platform in Go's spelling ("linux",
	// "arm64"), which picks the agent build. Empty OS means linux; empty
	// Arch means this machine's architecture.
	OS, Arch string
	// Agent is the path of an agent the backend already put in the
	// sandbox (a read-only mount of the very build in
	// Options.AgentBinary), which the host then starts as it is, without
	// finding, hashing or copying one. Empty means the host deploys the
	// agent itself.
	Agent string
}

// Recopier is an optional ability of a [Sandbox] whose CopyIn keeps a
// file of the right name and size without reading it (it was checked
// when it was copied): Recopy copies src to path again, checked end to
// end, whatever is there. [Env] calls it once when an agent it deployed
// does not start, before it gives up on the agent — a damaged copy costs
// one copy, not the agent.
type Recopier interface {
	Recopy(ctx context.Context, id, path string, src io.ReaderAt, size int64, perm fs.FileMode) error
}

// NativeExec is an optional ability of a [Sandbox]: running commands with
// the backend's own API (docker exec, a remote shell) when the agent
// cannot run there — another OS or architecture, no agent binary, no
// writable place for it, Options.NoAgent. The fallback is visible: [Env]
// says why in [Env.Fallback] and in every Result's warnings, and reports
// the native environment's own capabilities, which say what is missing.
type NativeExec interface {
	// Native returns an environment that runs commands in sandbox id
	// without the agent. If it also implements [envs.FileTransfer], files
	// go through it; otherwise file transfer is unsupported in the
	// fallback. A command that finds the sandbox gone fails with an error
	// matching [ErrGone], so the next command provisions again.
	Native(ctx context.Context, id string) (envs.Environment, error)
}

// Explainer is an optional ability of a [Sandbox] whose loss has causes
// callers branch on. Explain says what became of sandbox id, as Describe
// does, but as an error: one matching [envs.ErrSandboxKilled] (with the
// backend's details, for errors.As) when the sandbox was killed, stopped
// or removed from outside. Its text starts with the backend's name, as
// the backend's own errors do. [Env] calls it in place of Describe, and
// the error of the command (Run, Start, a started command's Wait, a file
// transfer) that lost the sandbox wraps what it returns.
type Explainer interface {
	Explain(ctx context.Context, id string) error
}

// ErrGone is what a native environment's errors wrap when the sandbox no
// longer exists or no longer runs: [Env] then provisions again on the next
// command, as it does when the agent's stream is lost.
var ErrGone = errors.New("remote: sandbox gone")
