package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
)

// DefaultPidsLimit is the container's task limit when Options.PidsLimit is zero.
const DefaultPidsLimit = 512

// DefaultStopTimeout is how long Close lets the container stop before it
// is killed, when Options.StopTimeout is zero.
const DefaultStopTimeout = 5 * time.Second

// DefaultReapAge is the age past which New removes exited runbox
// containers, when Options.ReapAge is zero.
const DefaultReapAge = 24 * time.Hour

// Mount is a bind mount (Source is a host path) or a named volume
// (Volume true, Source is the volume's name) in the container.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
	Volume   bool
}

// Options configures an [Env]. Only Image is required.
type Options struct {
	// Image is the container image. Required. A missing image is pulled.
	Image string
	// Task names the work this container is for; it is the key of reuse in
	// persistent mode and a label in both modes. Empty means a random id
	// (and is an error with Persistent).
	Task string
	// Owner is recorded in the container's labels. Empty means the
	// current user's name.
	Owner string
	// Persistent keeps the task's container after Close and reuses it
	// (starting it again if it was stopped) on the next New with the same
	// Task and Owner. False means ephemeral: Close removes it.
	Persistent bool
	// KeepRunning, with Persistent, leaves the container running at Close
	// (the agent session ends; what the container runs goes on), so
	// background jobs inside it outlive the process that started them.
	// False stops a persistent container at Close.
	KeepRunning bool
	// Dir is the initial working directory in the container. Empty means
	// the image's, or / when the image sets none.
	Dir string
	// Env is laid over every command's environment. It is sent with each
	// command over the agent protocol (or the exec API), never written
	// into the container's configuration, so a secret here does not show
	// in `docker inspect`. Nil adds nothing.
	Env map[string]string
	// Spawn is the child-environment policy of the exec fallback (the
	// agent applies its own default). Nil means spawn.DefaultPolicy().
	Spawn *spawn.Policy
	// Limits caps the whole container: memory and CPUs when non-zero.
	Limits envs.Limits
	// PidsLimit caps the container's tasks. Zero means DefaultPidsLimit;
	// negative means no limit.
	PidsLimit int64
	// Network is the container's network: "" is the engine's default
	// bridge, "none" cuts it off, any other value names a network.
	Network string
	// ReadOnlyRoot mounts the root filesystem read-only (/tmp stays a
	// writable tmpfs).
	ReadOnlyRoot bool
	// Mounts are bind mounts and named volumes. Nil means none.
	Mounts []Mount
	// Workspace, when set, bind-mounts that host directory at /workspace
	// and starts there; the environment then reports host access
	// (envs.CapHostAccess Active), since commands can change host files.
	// Empty means no host directory is visible.
	Workspace string
	// AgentBinary is the static (CGO_ENABLED=0) runbox binary to copy into
	// the container. Empty means: runbox-linux-<arch> next to the running
	// binary, else the running binary if it is a static runbox of the
	// container's architecture, else one built from SourceDir.
	AgentBinary string
	// SourceDir is the runbox module's root, to build the agent from.
	// Empty means: search upward from the current directory.
	SourceDir string
	// NoAgent skips the agent and runs every command with the exec API
	// (degraded: see the package doc). False tries the agent first.
	NoAgent bool
	// StopTimeout bounds the container's stop in Close. Zero means
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// ReapAge: New removes exited runbox containers older than this. Zero
	// means DefaultReapAge; negative disables the reaper.
	ReapAge time.Duration
	// Progress receives image-pull progress: a bar per layer on a
	// terminal, one line per layer and state otherwise. Nil discards it.
	Progress io.Writer
	// Client is the engine client. Nil means one from the environment
	// (DOCKER_HOST, ...) with API version negotiation, closed by Close.
	Client *client.Client
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// backend is what runs commands in the container: the agent client or the
// exec fallback.
type backend interface {
	envs.Environment
	envs.FileTransfer
}

// Env is the docker backend's [envs.Environment]: one container, with the
// runbox agent inside when it can run there.
type Env struct {
	opts    Options
	cli     *client.Client
	ownCli  bool
	log     *slog.Logger
	labels  map[string]string
	imgInfo imageInfo

	mu        sync.Mutex // serialises setup; guards the fields below
	closed    bool
	id        string  // container id
	be        backend // nil until set up, and after it failed
	agent     *agent.Client
	fallback  string // why the agent is not used ("" when it is)
	recreated bool   // the next result reports a recreated environment
}

var _ envs.Environment = (*Env)(nil)
var _ envs.FileTransfer = (*Env)(nil)

// NewClient returns an engine client configured from the environment
// (DOCKER_HOST, DOCKER_API_VERSION, ...) that negotiates the API version,
// so Debian's docker.io engine (API 1.41) works.
func NewClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	return cli, nil
}

// New creates (or, in persistent mode, finds) the container, deploys the
// agent and connects to it. ctx bounds all of that.
func New(ctx context.Context, opts Options) (*Env, error) {
	o := opts
	if o.Image == "" {
		return nil, fmt.Errorf("docker: no image given: %w", envs.ErrBadCommand)
	}
	if o.Persistent && o.Task == "" {
		return nil, fmt.Errorf("docker: persistent mode needs a Task to find its container again: %w", envs.ErrBadCommand)
	}
	if o.Task == "" {
		o.Task = randomID()
	}
	if o.Owner == "" {
		o.Owner = currentUser()
	}
	if o.PidsLimit == 0 {
		o.PidsLimit = DefaultPidsLimit
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.ReapAge == 0 {
		o.ReapAge = DefaultReapAge
	}
	if o.Spawn == nil {
		p := spawn.DefaultPolicy()
		o.Spawn = &p
	}
	o.Env = maps.Clone(o.Env)
	o.Mounts = append([]Mount(nil), o.Mounts...)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Env{opts: o, cli: o.Client, log: log}
	if e.cli == nil {
		cli, err := NewClient()
		if err != nil {
			return nil, err
		}
		e.cli, e.ownCli = cli, true
	}
	e.labels = labels(o)
	if o.ReapAge > 0 {
		if _, err := Reap(ctx, e.cli, o.ReapAge); err != nil {
			log.Debug("docker: reap", "err", err)
		}
	}
	info, err := e.ensureImage(ctx)
	if err != nil {
		e.closeClient()
		return nil, err
	}
	e.imgInfo = info
	e.mu.Lock()
	_, err = e.setupLocked(ctx)
	e.recreated = false // the first setup is a creation, not a recreation
	e.mu.Unlock()
	if err != nil {
		e.teardown(context.WithoutCancel(ctx), true, false)
		return nil, err
	}
	return e, nil
}

func (e *Env) closeClient() {
	if e.ownCli {
		e.cli.Close()
	}
}

// ContainerID is the id of the container commands currently run in.
func (e *Env) ContainerID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id
}

// Fallback says why commands run through the exec API rather than the
// agent; empty when the agent is in use.
func (e *Env) Fallback() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fallback
}

// ensure returns a live backend, recreating the container and its agent
// when they are gone. recreated is true when that happened since the last
// command reported it.
func (e *Env) ensure(ctx context.Context) (backend, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, false, fmt.Errorf("docker: %w", envs.ErrClosed)
	}
	if e.be != nil && (e.agent == nil || e.agent.Err() == nil) {
		rec := e.recreated
		e.recreated = false
		return e.be, rec, nil
	}
	be, err := e.setupLocked(ctx)
	if err != nil {
		return nil, false, err
	}
	rec := e.recreated
	e.recreated = false
	return be, rec, nil
}

// lost marks the backend dead after a command found the container or its
// agent gone, so the next command sets it up again, and returns the error
// that command reports.
func (e *Env) lost(ctx context.Context, be backend, op string, err error) error {
	e.mu.Lock()
	if e.be == be {
		e.dropBackendLocked()
	}
	id := e.id
	e.mu.Unlock()
	state := e.describe(context.WithoutCancel(ctx), id)
	return fmt.Errorf("docker: %s: container %s %s; the next command recreates the environment: %w", op, short(id), state, err)
}

func (e *Env) dropBackendLocked() {
	if e.be != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		e.be.Close(ctx)
		cancel()
	}
	e.be, e.agent = nil, nil
}

// isLost reports whether err means the container or agent is gone.
func isLost(err error) bool {
	return errors.Is(err, agent.ErrLost) || errors.Is(err, errContainerGone)
}

// overlay lays the environment's Env under the command's own.
func (e *Env) overlay(cmd envs.Command) envs.Command {
	if len(e.opts.Env) == 0 {
		return cmd
	}
	m := maps.Clone(e.opts.Env)
	maps.Copy(m, cmd.Env)
	cmd.Env = m
	return cmd
}

// Run runs cmd in the container. If the container or agent is gone
// mid-command, Run fails at once with an error saying so; the next command
// recreates the environment and its Result says EnvironmentRecreated.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("docker: run: %w", err)
	}
	be, rec, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	res, err := be.Run(ctx, e.overlay(cmd))
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "run", err)
		}
		return nil, fmt.Errorf("docker: run: %w", err)
	}
	if rec {
		res.EnvironmentRecreated = true
		res.Warnings = append(res.Warnings, "the container was gone and has been recreated; session state (cwd, variables) was reset")
	}
	if fb := e.Fallback(); fb != "" {
		res.Warnings = append(res.Warnings, "degraded: commands run through the docker exec API ("+fb+")")
	}
	return res, nil
}

// Start starts cmd in the container.
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	be, _, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	p, err := be.Start(ctx, e.overlay(cmd))
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "start", err)
		}
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	return p, nil
}

// Capabilities reports what this environment enforces: the agent's
// guarantees inside the container, plus what the container itself adds.
func (e *Env) Capabilities() envs.Capabilities {
	e.mu.Lock()
	be, fb := e.be, e.fallback
	e.mu.Unlock()
	var caps envs.Capabilities
	if be != nil {
		caps = be.Capabilities()
	} else {
		caps = envs.Capabilities{}
	}
	containerCaps(caps, e.opts, fb)
	return caps
}

// containerCaps adds what the container enforces regardless of the agent.
func containerCaps(caps envs.Capabilities, o Options, fallback string) {
	caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "container (capabilities dropped, no-new-privileges, pids limit)"}
	limits := fmt.Sprintf("container: pids %d", o.PidsLimit)
	if o.Limits.MemoryBytes > 0 {
		limits += fmt.Sprintf(", memory %d bytes", o.Limits.MemoryBytes)
	}
	if o.Limits.CPUs > 0 {
		limits += fmt.Sprintf(", cpus %g", o.Limits.CPUs)
	}
	caps[envs.CapLimits] = envs.CapInfo{State: envs.Active, Detail: limits + " (whole container; per-command limits only where the agent can make cgroups)"}
	switch o.Network {
	case "none":
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Active, Detail: "network none"}
	case "":
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "the engine's default bridge network (use network none to cut it)"}
	default:
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Degraded, Detail: "network " + o.Network}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "docker archive API"}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
	if o.Workspace != "" {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Active, Detail: o.Workspace + " is mounted read-write at /workspace"}
	} else {
		caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "no host directory is mounted"}
	}
	if fallback != "" {
		caps[envs.CapTreeKill] = envs.CapInfo{State: envs.Degraded, Detail: "exec API: only the command's process is killed (" + fallback + ")"}
		caps[envs.CapDurableOutput] = envs.CapInfo{State: envs.Unsupported, Detail: "exec API: output lives only in the client"}
		caps[envs.CapSessionState] = envs.CapInfo{State: envs.Unsupported, Detail: "exec API: each command starts fresh"}
		caps[envs.CapPTY] = envs.CapInfo{State: envs.Unsupported, Detail: "exec API fallback"}
		caps[envs.CapSignals] = envs.CapInfo{State: envs.Degraded, Detail: "exec API: signals through kill inside the container"}
		caps[envs.CapStdin] = envs.CapInfo{State: envs.Active, Detail: "exec API attach"}
	} else {
		caps[envs.CapDurableOutput] = envs.CapInfo{State: envs.Degraded, Detail: "spill files live inside the container"}
	}
}

// Close stops the agent's commands, then the container (within
// StopTimeout) and, in ephemeral mode, removes it.
func (e *Env) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	return e.teardown(ctx, !e.opts.Persistent, e.opts.Persistent && e.opts.KeepRunning)
}

func (e *Env) teardown(ctx context.Context, remove, keep bool) error {
	e.mu.Lock()
	var errs []error
	if e.be != nil {
		if err := e.be.Close(ctx); err != nil && !isLost(err) {
			errs = append(errs, err)
		}
	}
	e.be, e.agent = nil, nil
	id := e.id
	e.mu.Unlock()
	switch {
	case id == "" || keep:
	case remove:
		errs = append(errs, e.removeContainer(ctx, id))
	default:
		errs = append(errs, e.stopContainer(ctx, id))
	}
	e.closeClient()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker: close: %w", err)
	}
	return nil
}

// PutFile writes r to path in the container (through the agent, or the
// archive API in the fallback).
func (e *Env) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	be, _, err := e.ensure(ctx)
	if err != nil {
		return err
	}
	if err := be.PutFile(ctx, path, r, perm); err != nil {
		if isLost(err) {
			return e.lost(ctx, be, "put "+path, err)
		}
		return fmt.Errorf("docker: put %s: %w", path, err)
	}
	return nil
}

// GetFile opens path in the container for reading.
func (e *Env) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	be, _, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	r, err := be.GetFile(ctx, path)
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "get "+path, err)
		}
		return nil, fmt.Errorf("docker: get %s: %w", path, err)
	}
	return r, nil
}

// Capabilities reports what an environment made with opts would enforce
// when the agent runs in it, without creating one (for `runbox doctor`).
func Capabilities(opts Options) envs.Capabilities {
	o := opts
	if o.PidsLimit == 0 {
		o.PidsLimit = DefaultPidsLimit
	}
	caps := envs.Capabilities{
		envs.CapTreeKill:     {State: envs.Active, Detail: "the agent's process-group teardown inside the container"},
		envs.CapPTY:          {State: envs.Active, Detail: "agent"},
		envs.CapStdin:        {State: envs.Active, Detail: "agent"},
		envs.CapSignals:      {State: envs.Active, Detail: "agent"},
		envs.CapSessionState: {State: envs.Active, Detail: "agent (bash in the image; cwd and exports only with sh)"},
	}
	containerCaps(caps, o, "")
	return caps
}
