package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/undo"
)

// NetworkAllowlist is the network policy whose only exit is the caller's
// egress proxy: Options.Network may name it only with Options.Egress set.
const NetworkAllowlist = "allowlist"

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
	// Ignored when Egress is set.
	Network string
	// Egress, when set, puts the container on that network (its IPv6
	// switched off), whose only exit is one port of the host: the
	// caller's egress proxy (network policy allowlist). The caller owns
	// the network and closes it after the environment. Egress refuses
	// Persistent: a container kept past Close would outlive its proxy.
	Egress *EgressNetwork
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
	// AgentBinary is the static (CGO_ENABLED=0) agent the container runs:
	// a runbox-agent build, or a full runbox (it serves the same as
	// `runbox agent`). It is put once into a docker volume named after the
	// build (runbox-agent-<id>, labelled io.runbox.agent) and mounted
	// read-only into every container, so a new container costs no copy.
	// Empty means runbox-agent-linux-<arch> next to the running binary,
	// else the running binary when it is a static runbox, else one built
	// from SourceDir (see remote.Program.Find).
	AgentBinary string
	// CLIBinary is the static runbox CLI put at [CLIPath] before the first
	// command that runs it (job commands run runbox itself in the
	// container). Empty means runbox-linux-<arch> next to the running
	// binary, else the running binary if it is a static runbox of the
	// container's architecture, else one built from SourceDir.
	CLIBinary string
	// SourceDir is the runbox module's root, to build the agent (and the
	// CLI) from. Empty means: search upward from the current directory.
	SourceDir string
	// NoAgent skips the agent and runs every command with the exec API
	// (degraded: see the package doc). False tries the agent first.
	NoAgent bool
	// StopTimeout bounds the stop of a persistent container in Close (an
	// ephemeral one is removed at once: its agent has already ended its
	// commands). Zero means DefaultStopTimeout.
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

// Env is the docker backend's [envs.Environment]: one container, with the
// runbox agent inside when it can run there. The agent host (package
// remote) does the agent's part; this package supplies the container.
type Env struct {
	opts   Options
	cli    *client.Client
	ownCli bool
	sb     *sandbox
	host   *remote.Env

	closeOnce sync.Once // closes an engine client New made

	cliMu sync.Mutex // serialises deploying the CLI; guards cliIn
	cliIn string     // the container the CLI was put in
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

// withDefaults copies opts and fills its defaults.
func withDefaults(opts Options) Options {
	o := opts
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
	return o
}

// New creates (or, in persistent mode, finds) the container, deploys the
// agent and connects to it. ctx bounds all of that. When it fails after
// the container was made, the container goes as Close would take it (an
// ephemeral one is removed).
func New(ctx context.Context, opts Options) (*Env, error) {
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	return open(ctx, o, nil)
}

// checkOptions refuses options New cannot work with and fills defaults.
func checkOptions(opts Options) (Options, error) {
	if opts.Image == "" {
		return Options{}, fmt.Errorf("docker: no image given: %w", envs.ErrBadCommand)
	}
	if opts.Network == NetworkAllowlist && opts.Egress == nil {
		return Options{}, fmt.Errorf("docker: network allowlist needs its egress network and proxy (Options.Egress), which the caller runs: %w", envs.ErrUnsupported)
	}
	if opts.Egress != nil && opts.Persistent {
		return Options{}, fmt.Errorf("docker: network allowlist is for ephemeral containers (a persistent one would outlive its egress proxy): %w", envs.ErrUnsupported)
	}
	if opts.Persistent && opts.Task == "" {
		return Options{}, fmt.Errorf("docker: persistent mode needs a Task to find its container again: %w", envs.ErrBadCommand)
	}
	o := withDefaults(opts)
	if o.Task == "" {
		o.Task = randomID()
	}
	return o, nil
}

// open makes the environment for o (defaults filled). extra labels are
// added to a container it creates (a pool's).
func open(ctx context.Context, o Options, extra map[string]string) (*Env, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Env{opts: o, cli: o.Client}
	if e.cli == nil {
		cli, err := NewClient()
		if err != nil {
			return nil, err
		}
		e.cli, e.ownCli = cli, true
	}
	if o.ReapAge > 0 {
		if _, err := Reap(ctx, e.cli, o.ReapAge); err != nil {
			log.Debug("docker: reap", "err", err)
		}
		// Only an allow-listed environment pays for the firewall's
		// listing: the networks reaped are those of earlier ones.
		if o.Egress != nil {
			if _, err := ReapNetworks(ctx, e.cli, "", min(o.ReapAge, reapNetworkAge)); err != nil {
				log.Debug("docker: reap networks", "err", err)
			}
		}
	}
	info, err := ensureImage(ctx, e.cli, o)
	if err != nil {
		e.closeClient()
		return nil, err
	}
	lb := labels(o)
	maps.Copy(lb, extra)
	e.sb = &sandbox{cli: e.cli, opts: o, labels: lb, img: info, log: log}
	agentBinary := o.AgentBinary
	if b := mountableAgent(ctx, e.cli, o, info, log); b != nil {
		e.sb.agent, agentBinary = b, b.path
	}
	e.host, err = remote.New(ctx, e.sb, remote.Options{
		Name:        "docker",
		Kind:        "container",
		AgentBinary: agentBinary,
		SourceDir:   o.SourceDir,
		NoAgent:     o.NoAgent,
		Logger:      log,
	})
	if err != nil {
		e.closeClient()
		return nil, err
	}
	return e, nil
}

// mountableAgent resolves the agent build for the image and makes sure
// its volume is on the engine, so the container mounts it instead of
// receiving a copy. nil (logged) leaves the agent to the host, which
// copies it in or says why it cannot run.
func mountableAgent(ctx context.Context, cli *client.Client, o Options, img imageInfo, log *slog.Logger) *agentBuild {
	if o.NoAgent || img.os != "" && img.os != "linux" {
		return nil
	}
	arch := img.arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	b, err := resolveAgent(ctx, o, arch)
	if err == nil {
		err = b.ensureVolume(ctx, cli, o.Image, false)
	}
	if err != nil {
		log.Debug("docker: agent volume unavailable; the agent is copied in", "err", err)
		return nil
	}
	return &b
}

func (e *Env) closeClient() {
	if e.ownCli {
		e.cli.Close()
	}
}

// ContainerID is the id of the container commands currently run in.
func (e *Env) ContainerID() string { return e.host.ID() }

// Fallback says why commands run through the exec API rather than the
// agent; empty when the agent is in use.
func (e *Env) Fallback() string { return e.host.Fallback() }

// CLIPath is where a command finds the full runbox CLI in the container
// ([CLIPath]): it is put there before the first command that runs it.
func (e *Env) CLIPath() string { return CLIPath }

// Run runs cmd in the container. If the container or agent is gone
// mid-command, Run fails at once with an error saying so; the next command
// recreates the environment and its Result says EnvironmentRecreated.
// A command whose argv[0] is [CLIPath] gets the runbox CLI put there first.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.host.Run(ctx, e.overlay(cmd))
}

// Start starts cmd in the container (see Run for [CLIPath]).
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.host.Start(ctx, e.overlay(cmd))
}

// overlay lays Options.Env under the command's own. It is applied here,
// not by the agent host, so that an environment made ahead of its user (a
// pool's) takes the Env of the user it is handed to.
func (e *Env) overlay(cmd envs.Command) envs.Command { return remote.Overlay(e.opts.Env, cmd) }

// Capabilities reports what this environment enforces: the agent's
// guarantees inside the container (the exec API's, in the fallback), plus
// what the container itself adds.
func (e *Env) Capabilities() envs.Capabilities { return e.host.Capabilities() }

// Journal is the change journal runbox's agent keeps in the container for the
// workspace root (package undo; an empty root: the agent's initial
// directory), as [remote.Env.Journal] says.
func (e *Env) Journal(ctx context.Context, root string, o undo.Options) (envs.ChangeJournal, error) {
	return e.host.Journal(ctx, root, o)
}

// Close stops the agent's commands, then removes an ephemeral container,
// or stops a persistent one (within StopTimeout) unless KeepRunning. An
// environment a [Pool] handed out has its container removed in the
// background, by the pool (whose Close waits for it).
func (e *Env) Close(ctx context.Context) error {
	err := e.host.Close(ctx)
	e.closeOnce.Do(e.closeClient)
	return err
}

// PutFile writes r to path in the container (through the agent, or the
// archive API in the fallback).
func (e *Env) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	return e.host.PutFile(ctx, path, r, perm)
}

// GetFile opens path in the container for reading.
func (e *Env) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	return e.host.GetFile(ctx, path)
}

// Capabilities reports what an environment made with opts would enforce
// when the agent runs in it, without creating one (for `runbox doctor`).
func Capabilities(opts Options) envs.Capabilities {
	caps := remote.AgentCapabilities()
	(&sandbox{opts: withDefaults(opts)}).Capabilities(caps)
	return caps
}
