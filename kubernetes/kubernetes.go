package kubernetes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"sync"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// Env is a kubernetes environment: the agent host over a pod. It is an
// [envs.Environment] and [envs.FileTransfer], safe for concurrent use.
type Env struct {
	*remote.Env
	sb   *sandbox
	opts Options

	cliMu sync.Mutex
	cliIn string // the pod the runbox CLI was put in last
}

var (
	_ envs.Environment  = (*Env)(nil)
	_ envs.FileTransfer = (*Env)(nil)
)

// New opens an environment in a pod — a new plain pod, a pod bound to a
// new SandboxClaim, or the task's — with the runbox agent inside. ctx
// bounds all of that; a pod made on the way is deleted when it fails.
func New(ctx context.Context, opts Options) (*Env, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	c, err := connect(o)
	if err != nil {
		return nil, err
	}
	claim, err := useClaims(ctx, c, o)
	if err != nil {
		c.close()
		return nil, err
	}
	sb := &sandbox{c: c, opts: o, claim: claim, holder: holder(), log: o.Logger, pods: map[string]podRef{}, archs: map[string]string{}}
	re, err := remote.New(ctx, sb, remote.Options{
		Name:        "kubernetes",
		Kind:        "pod",
		AgentBinary: o.AgentBinary,
		SourceDir:   o.SourceDir,
		AgentDir:    o.AgentDir,
		Env:         o.Env,
		Logger:      o.Logger,
	})
	if err != nil {
		c.close()
		return nil, err
	}
	return &Env{Env: re, sb: sb, opts: o}, nil
}

// Close ends the agent's commands, deletes the environment's own pod (or
// claim) — a task's is left running — and closes the cluster's
// connections.
func (e *Env) Close(ctx context.Context) error {
	err := e.Env.Close(ctx)
	e.sb.c.close()
	return err
}

// useClaims decides between a claim and a plain pod: ModeClaim needs the
// Agent Sandbox API, ModeAuto uses it when a template is named and the
// API is served.
func useClaims(ctx context.Context, c *cluster, o Options) (bool, error) {
	switch o.Mode {
	case ModePlain:
		return false, nil
	case ModeClaim:
		if err := c.agentSandbox(ctx); err != nil {
			return false, fmt.Errorf("kubernetes: mode claim: %w", err)
		}
		return true, nil
	}
	if o.WarmPool == "" {
		return false, nil
	}
	if err := c.agentSandbox(ctx); err != nil {
		o.Logger.Debug("kubernetes: no Agent Sandbox API; using a plain pod", "err", err)
		return false, nil
	}
	return true, nil
}

// fill checks opts and fills the defaults.
func fill(opts Options) (Options, error) {
	o := opts
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.PullPolicy == "" {
		o.PullPolicy = "IfNotPresent"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Owner == "" {
		o.Owner = currentUser()
	}
	if o.AgentDir == "" && o.NonRoot {
		o.AgentDir = NonRootAgentDir
	}
	switch {
	case o.Mode != ModeAuto && o.Mode != ModePlain && o.Mode != ModeClaim:
		return o, fmt.Errorf("kubernetes: mode must be plain, claim or auto, got %q: %w", o.Mode, envs.ErrBadCommand)
	case o.Mode == ModeClaim && o.WarmPool == "":
		return o, fmt.Errorf("kubernetes: mode claim needs a SandboxWarmPool to claim from (kubernetes.warm_pool): %w", envs.ErrBadCommand)
	case o.PullPolicy != "Always" && o.PullPolicy != "IfNotPresent" && o.PullPolicy != "Never":
		return o, fmt.Errorf("kubernetes: pull policy must be Always, IfNotPresent or Never, got %q: %w", o.PullPolicy, envs.ErrBadCommand)
	case o.CPU < 0 || o.MemoryBytes < 0:
		return o, fmt.Errorf("kubernetes: cpu and memory must be >= 0: %w", envs.ErrBadCommand)
	}
	return o, nil
}

// currentUser is the user's name, else the uid.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// PodName is the pod commands currently run in.
func (e *Env) PodName() string { return e.Env.ID() }

// Namespace is the namespace the environment's pods are in.
func (e *Env) Namespace() string { return e.sb.c.ns }

// Claimed says whether the pod comes from a SandboxClaim.
func (e *Env) Claimed() bool { return e.sb.claim }

// CLIPath is where the full runbox CLI is put in the pod for commands
// that run runbox itself there (the job commands: their daemon lives in
// the pod). It is put there before the first command whose argv[0] is
// CLIPath, and again after the pod was recreated; other commands never
// pay for it.
func (e *Env) CLIPath() string {
	dir := e.opts.AgentDir
	if dir == "" {
		dir = remote.DefaultAgentDir
	}
	return dir + "/runbox"
}

// Run runs cmd in the pod. If the pod or its agent is lost mid-command,
// Run fails at once with an error saying what became of the pod; the
// next command provisions again and its Result says EnvironmentRecreated.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.Env.Run(ctx, cmd)
}

// Start starts cmd in the pod (see Run for CLIPath).
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.Env.Start(ctx, cmd)
}

// ensureCLI puts the runbox CLI at CLIPath when cmd runs it and it is not
// in the current pod yet.
func (e *Env) ensureCLI(ctx context.Context, cmd envs.Command) error {
	if len(cmd.Args) == 0 || cmd.Args[0] != e.CLIPath() {
		return nil
	}
	id := e.Env.ID()
	e.cliMu.Lock()
	defer e.cliMu.Unlock()
	if e.cliIn == id {
		return nil
	}
	arch := e.sb.arch(id)
	bin := e.opts.CLIBinary
	var err error
	if bin != "" {
		if err := remote.CheckStatic(bin, arch); err != nil {
			return fmt.Errorf("kubernetes: runbox CLI: %w", err)
		}
	} else if bin, err = remote.CLI().FindSmall(ctx, arch, e.opts.SourceDir); err != nil {
		return fmt.Errorf("kubernetes: runbox CLI for the pod: %w", err)
	}
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("kubernetes: runbox CLI: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("kubernetes: runbox CLI: %w", err)
	}
	// A same-sized file at the path is taken as this build only for the
	// agent, whose name carries its digest: the CLI is written anew.
	if err := e.sb.putFresh(ctx, id, e.CLIPath(), f, fi.Size()); err != nil {
		return fmt.Errorf("kubernetes: put the runbox CLI in pod %s: %w", id, err)
	}
	e.cliIn = id
	return nil
}

// putFresh writes src to p in pod id, whatever is there.
func (s *sandbox) putFresh(ctx context.Context, id, p string, src io.ReaderAt, size int64) error {
	ctr := s.ref(id).container
	script := `set -e; mkdir -p "$(dirname "$1")"; cat > "$1.tmp"; [ "$(wc -c < "$1.tmp")" = "$2" ]; chmod 755 "$1.tmp"; mv -f "$1.tmp" "$1"`
	code, stderr, err := s.c.execRun(ctx, id, ctr, []string{"sh", "-c", script, "sh", p, strconv.FormatInt(size, 10)}, io.NewSectionReader(src, 0, size))
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("write %s: exit code %d: %s", p, code, stderr)
	}
	return nil
}

// Capabilities is what an environment opened with opts would report, in
// a plain pod, without opening one (for runbox doctor).
func Capabilities(opts Options) envs.Capabilities {
	o, _ := fill(opts)
	caps := remote.AgentCapabilities()
	podCapabilities(o, o.Mode == ModeClaim, caps)
	return caps
}

// Check says whether the API server answers with the configured
// credentials.
func Check(ctx context.Context, opts Options) error {
	return withCluster(opts, func(c *cluster) error { return c.ping(ctx) })
}

// AgentSandbox says whether the cluster serves the Agent Sandbox API
// (SandboxClaim from a SandboxTemplate, with its warm pools): nil when it
// does, else an error saying why not.
func AgentSandbox(ctx context.Context, opts Options) error {
	return withCluster(opts, func(c *cluster) error { return c.agentSandbox(ctx) })
}

// withCluster connects as opts say, calls f, and closes the connection.
func withCluster(opts Options, f func(*cluster) error) error {
	c, _, err := dial(opts)
	if err != nil {
		return err
	}
	defer c.close()
	return f(c)
}

// dial fills in opts and connects as they say; the caller closes the
// cluster.
func dial(opts Options) (*cluster, Options, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, o, err
	}
	c, err := connect(o)
	return c, o, err
}

// Provider is the kubernetes backend's row of a provider table; options
// turns a caller's Spec into Options.
func Provider(options func(envs.Spec) Options) envs.Provider {
	p := envs.Row("kubernetes", "a pod per task on a Kubernetes cluster (plain, or an Agent Sandbox claim), with the runbox agent inside", options, New, Check, Capabilities)
	p.Jobs, p.TaskEnvs = envs.LastingJobs, true
	return p
}
