package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/gitguard"
	"github.com/runbox/runbox/internal/inherit"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/termination"
)

// NoGrace, as Options.Grace, sends SIGKILL at once instead of SIGTERM first.
const NoGrace time.Duration = -1

// Options configures an [Env]. The zero value is usable.
type Options struct {
	// Dir is the session's initial working directory. Empty means the
	// current directory of this process.
	Dir string
	// Shell is the shell that runs shell-string commands. Empty means bash
	// when it is on PATH, else sh.
	Shell string
	// BaseEnv is the environment children are built from (by spawn, which
	// strips secrets). Nil means this process's environment.
	BaseEnv []string
	// Env is laid over every command's environment (a command's own Env
	// is laid over this).
	Env map[string]string
	// Spawn is the child-environment policy. The zero value means
	// spawn.DefaultPolicy().
	Spawn *spawn.Policy
	// Served and Launch are the profile being served and the one this
	// process was launched with (see spawn). Zero values mean "the same".
	Served, Launch spawn.Profile
	// Grace is how long teardown waits after each SIGTERM round. Zero
	// means termination.DefaultGrace; NoGrace means SIGKILL at once.
	Grace time.Duration
	// Limits apply to every command that sets none of its own. Zero means
	// no limits.
	Limits envs.Limits
	// NoContainment keeps commands in process groups only. By default
	// every command is placed in its own systemd scope or cgroup when the
	// host allows it (see termination.Detect), which also catches children
	// that double-fork and setsid away from the process group.
	NoContainment bool
	// DrainDelay bounds how long output is still awaited after the
	// command's direct child exited, when a process it left running holds
	// the pipe open. Then the output is cut: what the pipe holds is still
	// read, and the result carries OutputCutWarning. Output written
	// before the exit is never lost to the cut. Zero means 250ms.
	DrainDelay time.Duration
	// KeepLeftovers leaves what a command started and did not wait for
	// running until Close, instead of killing it when the command exits.
	// An agent inside a sandbox sets it (the sandbox bounds what is left,
	// and runbox's own job daemon, started by a command there, must
	// outlive that command). False, the default, kills leftovers with
	// their command and counts them in ExitStatus.LeftoverKilled.
	KeepLeftovers bool
	// Subreaper is the argv prefix that runs the runbox binary's
	// subreaper (for example {"/usr/bin/runbox", subreaper.Command}; see
	// package internal/subreaper). When it is set, a command that gets
	// no cgroup or systemd scope runs under it, so a child that calls
	// setsid and outlives its parent is still torn down. Nil means such a
	// command runs directly, and tree kill is reported degraded: a
	// double-forked setsid child escapes it.
	Subreaper []string
	// Confine is the sandbox every command starts under (see package
	// confine): shells, argv commands, PTYs and pre-started shells alike.
	// The environment adds its state directory and a private TMPDIR
	// (made 0700, exported to commands, removed at Close) to the policy's
	// Writable. Nil means the workspace profile at Dir (read-only at /),
	// with the home directory's secrets denied and no network but the
	// command's own loopback servers (there is no egress proxy without
	// the service): confinement is the default, never something a
	// caller must remember to attach. confine.Off() runs commands
	// unconfined, and every result says so.
	Confine *confine.Policy
	// Confiner is the argv prefix that runs the runbox binary's
	// trampoline (for example {"/usr/bin/runbox", confine.Command}). Nil
	// means confine.Locate (runbox-confine beside this program or on
	// PATH). When none is found, or the kernel cannot give the sandbox
	// (confine.Probe), every command is refused with an error that says
	// what is missing: never run unconfined.
	Confiner []string
	// SpillDir is where oversized output is spilled. Empty means
	// envs.DefaultSpillDir(), where spills older than envs.SpillRetention
	// are removed whenever a new one is made.
	SpillDir string
	// SpillMax bounds a spill file (0: envs.DefaultSpillMax).
	SpillMax int64
	// RemoveSpillsOnClose makes Close delete the spill files of every
	// result this environment returned. False leaves them for the caller
	// (see envs.Result.RemoveSpills).
	RemoveSpillsOnClose bool
	// NoPrestart turns off the warm shell. By default, with bash, the
	// environment keeps the next command's shell started ahead of it,
	// already in its container and waiting for its command (see the
	// package documentation), which takes the shell's start off each
	// command's time at the cost of one idle bash per environment.
	NoPrestart bool
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// Env is the local backend's [envs.Environment]. It is safe for concurrent use.
type Env struct {
	opts     Options
	shell    string
	bash     bool
	stateDir string
	prologue string // bash's BASH_ENV file
	// warmSource holds a warm shell's BASH_ENV, sealed (see
	// newWarmPrologue); warmPrologue is the file used instead when
	// there is none.
	warmSource   *os.File
	warmPrologue string
	log          *slog.Logger
	// gitTree is the workspace as the git check after each confined
	// command last saw it, so the next one reads only what changed.
	gitTree gitguard.Tree

	mu         sync.Mutex
	closed     bool
	cwd        string
	state      string // path of the adopted shell-state script; "" before the first
	seq        int
	running    map[*process]struct{}
	stateRefs  map[string]int  // running commands restoring each state file
	stateNames map[string]bool // variables exported in the adopted state
	// stateDefines: the adopted state may define functions or aliases
	// (see defines), so no command keeps it unsaved.
	stateDefines bool
	spills       []string // spill files Close removes (RemoveSpillsOnClose)

	// The warm shells (see warm.go): warm wait for the next commands
	// that fit them; warmStarting are being started; warmWant is how
	// many the pool keeps (0 means 1); warmed, when not nil, is closed
	// when a start ends; warmFailures counts failures in a row; bg owns
	// the goroutines that start and dispose of warm shells.
	warm         []*warmShell
	warmStarting int
	warmWant     int
	warmed       chan struct{}
	warmTaken    bool              // a command has taken a warm shell
	warmReady    map[*os.File]bool // ready pipes of the shells being started
	warmFailures int
	bg           sync.WaitGroup
	// spares are empty containers kept for the next warm shells (see
	// recycle).
	spares []termination.Container
	// noCloneInto: the kernel refused to start a child inside its cgroup
	// (see startInto); children are moved in after they start.
	noCloneInto atomic.Bool

	// sandbox is the confinement of every command (see confine.go).
	sandbox sandbox

	// failStep, set by tests only, is asked before each step of a launch
	// plan (see plan.go): an error fails that step as if it had, so that
	// each rollback can be seen to leave nothing behind. Nil otherwise.
	failStep func(step string, p *plan) error

	// reaper keeps containers that could not be removed and retries them;
	// Close retries once more and reports what is still pending.
	reaper *termination.Reaper

	detectOnce sync.Once
	detected   termination.Detection

	// The child environment of commands without variables of their own,
	// built once when it cannot change (see childEnv).
	baseOnce sync.Once
	baseEnv  []string
	baseRes  *spawn.Result
	baseErr  error
}

// detection probes the host's containment mechanisms once; every command's
// container is chosen from it, so no command pays for a new probe (a
// D-Bus round trip on systemd hosts).
func (e *Env) detection() termination.Detection {
	e.detectOnce.Do(func() { e.detected = termination.Detect(context.Background()) })
	return e.detected
}

var _ envs.Environment = (*Env)(nil)
var _ envs.FileTransfer = (*Env)(nil)

// New returns a local environment. It fails if the shell or the initial
// directory cannot be found, or the descriptors this process inherited
// cannot be kept from its commands: New marks every descriptor above
// standard error close-on-exec (see package inherit), since one left
// open by whoever started the process would reach every command, a
// confined one too, wherever it leads.
func New(opts Options) (*Env, error) {
	if err := inherit.CloseOnExec(); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	o := opts
	if o.Grace == 0 {
		o.Grace = termination.DefaultGrace
	} else if o.Grace < 0 {
		o.Grace = 0
	}
	if o.DrainDelay <= 0 {
		o.DrainDelay = 250 * time.Millisecond
	}
	if o.BaseEnv == nil {
		o.BaseEnv = os.Environ()
	}
	if o.Spawn == nil {
		p := spawn.DefaultPolicy()
		o.Spawn = &p
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shell, err := findShell(o.Shell)
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("local: working directory: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("local: working directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("local: %w", &envs.DirError{Dir: dir, Err: errNotDir(err)})
	}
	stateDir, err := os.MkdirTemp(stateParent(), "runbox-session-*")
	if err != nil {
		return nil, fmt.Errorf("local: session state dir: %w", err)
	}
	prologue := filepath.Join(stateDir, "prologue.bash")
	if err := os.WriteFile(prologue, []byte(bashPrologue), 0o600); err != nil {
		os.RemoveAll(stateDir)
		return nil, fmt.Errorf("local: session prologue: %w", err)
	}
	warmPro, warmSource, err := newWarmPrologue(stateDir, log)
	if err != nil {
		os.RemoveAll(stateDir)
		return nil, err
	}
	sb, err := newSandbox(&o, dir, stateDir)
	if err != nil {
		closeAll(warmSource)
		os.RemoveAll(stateDir)
		return nil, err
	}
	if sb.threads != nil && inWritable(*sb.policy, shell) {
		sb.threads.off.Store(true)
	}
	e := &Env{
		prologue:     prologue,
		warmPrologue: warmPro,
		warmSource:   warmSource,
		reaper:       termination.NewReaper(0, log),
		opts:         o,
		shell:        shell,
		bash:         filepath.Base(shell) == "bash",
		stateDir:     stateDir,
		log:          log,
		cwd:          dir,
		running:      map[*process]struct{}{},
		stateRefs:    map[string]int{},
		sandbox:      sb,
	}
	e.prewarm()
	return e, nil
}

// stateParent is where session state lives: memory-backed /dev/shm when
// there is one (every command writes its state anew, and on a disk
// filesystem those small writes cost more than the shell itself), else
// the temporary directory. The session directory itself is private (0700).
func stateParent() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

func errNotDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("not a directory")
}

func findShell(want string) (string, error) {
	p, err := launch.Shell(want)
	if err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	return p, nil
}

// Cwd is the session's current working directory.
func (e *Env) Cwd() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cwd
}

// Run runs cmd to completion with bounded output capture.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("local: run: %w", err)
	}
	out := envs.NewCapture(cmd.Limit(), e.opts.SpillDir)
	out.SetSpillMax(e.opts.SpillMax)
	var errc *envs.Capture
	if cmd.SeparateStreams && cmd.PTY == nil {
		errc = envs.NewCapture(cmd.Limit(), e.opts.SpillDir)
		errc.SetSpillMax(e.opts.SpillMax)
	}
	p, res, err := e.start(ctx, cmd, out, errc)
	if res != nil {
		e.noteSandbox(res, nil)
	}
	if err != nil || res != nil {
		return res, err
	}
	st, err := p.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	res = &envs.Result{ExitStatus: st, Cwd: p.cwdAfter, Duration: p.duration, Warnings: p.warnings}
	fillOutput(res, out, errc)
	e.noteSandbox(res, p.denials.list())
	e.noteSpills(res)
	return res, nil
}

// noteSpills remembers res's spill files for Close, when it is to remove them.
func (e *Env) noteSpills(res *envs.Result) {
	if !e.opts.RemoveSpillsOnClose || res.SpillPath == "" && res.StderrSpillPath == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spills = append(e.spills, res.SpillPath, res.StderrSpillPath)
}

func fillOutput(res *envs.Result, out, errc *envs.Capture) {
	out.Close()
	res.Output = string(out.Bytes())
	res.Truncated = out.Truncated()
	res.SpillPath = out.SpillPath()
	res.TotalBytes = out.Total()
	if errc != nil {
		errc.Close()
		res.Stderr = string(errc.Bytes())
		res.Truncated = res.Truncated || errc.Truncated()
		res.StderrSpillPath = errc.SpillPath()
		res.TotalBytes += errc.Total()
	}
}

// Start starts cmd and returns a streaming process.
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("local: start: %w", err)
	}
	p, res, err := e.start(ctx, cmd, nil, nil)
	if err != nil {
		return nil, err
	}
	if res != nil {
		return finishedProcess(res), nil
	}
	return p, nil
}

// Capabilities reports what this environment enforces.
func (e *Env) Capabilities() envs.Capabilities {
	return capabilities(e.bash, !e.opts.NoContainment, e.opts.Subreaper != nil, e.detection())
}

// Capabilities reports what an environment opened with opts would
// enforce, without opening one (no session directory, no goroutine). It
// probes the host's containment mechanisms, as [termination.Detect] does.
func Capabilities(ctx context.Context, opts Options) envs.Capabilities {
	shell, err := findShell(opts.Shell)
	bash := err == nil && filepath.Base(shell) == "bash"
	return capabilities(bash, !opts.NoContainment, opts.Subreaper != nil, termination.Detect(ctx))
}

func capabilities(bash, contain, reaper bool, d termination.Detection) envs.Capabilities {
	caps := envs.Capabilities{
		envs.CapTreeKill:      {State: envs.Active, Detail: "process group + /proc descendants snapshot, parent first"},
		envs.CapPTY:           {State: envs.Active},
		envs.CapStdin:         {State: envs.Active},
		envs.CapSignals:       {State: envs.Active},
		envs.CapFileTransfer:  {State: envs.Active},
		envs.CapHostAccess:    {State: envs.Active, Detail: "commands run on this machine"},
		envs.CapUndo:          {State: envs.Active, Detail: "runbox records each command's workspace changes here (workspace.changes, run --changes) and runbox undo puts them back"},
		envs.CapNetworkPolicy: {State: envs.Unsupported, Detail: "the host network is used as is"},
		envs.CapSnapshots:     {State: envs.Unsupported},
		envs.CapDurableOutput: {State: envs.Unsupported, Detail: "use procregistry for durable output"},
	}
	if bash {
		caps[envs.CapSessionState] = envs.CapInfo{State: envs.Active, Detail: "cwd, exports, functions, aliases (bash)"}
	} else {
		caps[envs.CapSessionState] = envs.CapInfo{State: envs.Degraded, Detail: "cwd and exports only (no bash)"}
	}
	containmentCaps(caps, contain, d)
	if !contain || d.Mechanism == termination.ProcessGroup {
		if reaper {
			caps[envs.CapTreeKill] = envs.CapInfo{State: envs.Active, Detail: "process group + a subreaper per command, parent first"}
		} else {
			caps[envs.CapTreeKill] = envs.CapInfo{State: envs.Degraded, Detail: "process group + /proc snapshot: a child that calls setsid and outlives its parent escapes (no cgroup, no subreaper)"}
		}
	}
	return caps
}

// Close kills every command still running and removes the session state.
func (e *Env) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	procs := make([]*process, 0, len(e.running))
	for p := range e.running {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, p := range procs {
		wg.Go(func() {
			if err := p.Kill(ctx); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
			p.abandon()
		})
	}
	wg.Wait()
	e.gitTree.Close()
	e.closeWarm()
	e.sandbox.threads.close()
	closeAll(e.warmSource)
	if err := e.reaper.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(e.stateDir); err != nil {
		errs = append(errs, err)
	}
	if e.sandbox.tmpDir != "" {
		if err := os.RemoveAll(e.sandbox.tmpDir); err != nil {
			errs = append(errs, err)
		}
	}
	e.mu.Lock()
	spills := e.spills
	e.spills = nil
	e.mu.Unlock()
	for _, p := range spills {
		if err := (&envs.Result{SpillPath: p}).RemoveSpills(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("local: close: %w", err)
	}
	return nil
}

// PutFile writes r to path (relative paths are taken from the session's cwd).
func (e *Env) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	path = e.abs(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("local: put %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("local: put %s: %w", path, err)
	}
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		f.Close()
		return fmt.Errorf("local: put %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("local: put %s: %w", path, err)
	}
	return nil
}

// GetFile opens path for reading. A fifo or a socket is refused, not
// waited on: a command can leave one where a file was, and opening a fifo
// waits for a writer that may never come.
func (e *Env) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	f, err := os.OpenFile(e.abs(path), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: %w", envs.ErrNotFound, err)
		}
		return nil, fmt.Errorf("local: get %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
		f.Close()
		if err == nil {
			err = errors.New("a fifo or a socket, not a file")
		}
		return nil, fmt.Errorf("local: get %s: %w", path, err)
	}
	return f, nil
}

func (e *Env) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(e.Cwd(), path)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
