package ssh

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"sync"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

// Env is the ssh backend's [envs.Environment]: one connection to a host,
// with the runbox agent on the far side. The agent host (package remote)
// does the agent's part; this package supplies the connection.
type Env struct {
	sb        *sandbox
	host      *remote.Env
	agentDir  string // on the host
	closeOnce sync.Once

	cliMu sync.Mutex
	cliUp bool // the runbox CLI is at CLIPath
}

var _ envs.Environment = (*Env)(nil)
var _ envs.FileTransfer = (*Env)(nil)

// New connects to the host, uploads the agent (unless the host has this
// build already) and starts it. ctx bounds all of that.
func New(ctx context.Context, opts Options) (*Env, error) {
	o := withDefaults(opts)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t, ids, err := resolveTarget(o)
	if err != nil {
		return nil, err
	}
	if o.Identity == nil && len(ids) > 0 {
		o.Identity = ids // the OpenSSH configuration's, for this host
	}
	a, err := newAuth(o)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{o: o, t: t, auth: a, hk: &hostKeys{file: o.KnownHosts, acceptNew: o.AcceptNew}, log: o.Logger}
	// The first connection finds the remote cache directory, where the
	// agent goes.
	if _, err := sb.connect(ctx); err != nil {
		a.close()
		return nil, err
	}
	dir := o.AgentDir
	if dir == "" {
		dir = path.Join(sb.cacheDir, "runbox", "agent")
	}
	host, err := remote.New(ctx, sb, remote.Options{
		Name:        "ssh",
		Kind:        "host",
		AgentBinary: o.AgentBinary,
		SourceDir:   o.SourceDir,
		AgentDir:    dir,
		NoAgent:     o.NoAgent,
		Env:         o.Env,
		Logger:      o.Logger,
	})
	if err != nil {
		sb.Release(ctx, t.String())
		a.close()
		return nil, err
	}
	return &Env{sb: sb, host: host, agentDir: dir}, nil
}

// Host is user@host:port of the connection.
func (e *Env) Host() string { return e.sb.t.String() }

// Fallback says why commands run without the agent; empty when the agent
// is in use.
func (e *Env) Fallback() string { return e.host.Fallback() }

// Run runs cmd on the host. If the connection drops mid-command, Run fails
// at once with an error saying so; the next command connects again and its
// Result says EnvironmentRecreated. A command whose argv[0] is
// [Env.CLIPath] gets the runbox CLI uploaded first.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.host.Run(ctx, cmd)
}

// Start starts cmd on the host (see Run for [Env.CLIPath]).
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := e.ensureCLI(ctx, cmd); err != nil {
		return nil, err
	}
	return e.host.Start(ctx, cmd)
}

// Capabilities reports the agent's guarantees on the host (the fallback's,
// without it) and what a remote host adds.
func (e *Env) Capabilities() envs.Capabilities { return e.host.Capabilities() }

// Journal is the change journal runbox's agent keeps on the host for the
// workspace root (package undo; an empty root: the agent's initial
// directory), as [remote.Env.Journal] says.
func (e *Env) Journal(ctx context.Context, root string, o undo.Options) (envs.ChangeJournal, error) {
	return e.host.Journal(ctx, root, o)
}

// Close stops the agent's commands and closes the connection.
func (e *Env) Close(ctx context.Context) error {
	err := e.host.Close(ctx)
	e.closeOnce.Do(e.sb.auth.close)
	return err
}

// PutFile writes r to path on the host.
func (e *Env) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	return e.host.PutFile(ctx, path, r, perm)
}

// GetFile opens path on the host for reading.
func (e *Env) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	return e.host.GetFile(ctx, path)
}

// Capabilities reports what an environment made with opts would enforce
// when the agent runs on the host, without connecting (`runbox doctor`).
func Capabilities(opts Options) envs.Capabilities {
	caps := remote.AgentCapabilities()
	t, err := parseTarget(opts.Host, opts.User, opts.Port)
	if err != nil {
		t = target{} // no host yet: the report names none
	}
	(&sandbox{t: t}).Capabilities(caps)
	return caps
}

// Provider is the ssh backend's row of a provider table; options turns a
// caller's Spec into Options. Registering the backend is one line:
//
//	providers.Register(ssh.Provider(optionsFromConfig))
func Provider(options func(envs.Spec) Options) envs.Provider {
	return envs.Provider{
		Name:        "ssh",
		Description: "a remote host over ssh (one connection), with the runbox agent on the far side",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			o := options(spec)
			if o.Host == "" {
				return nil, fmt.Errorf("ssh: no host given (--host user@host[:port], or ssh.host in the configuration): %w", envs.ErrBadCommand)
			}
			return New(ctx, o)
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return Capabilities(options(spec))
		},
		// The host outlives every command: jobs started there by one
		// runbox are there for the next.
		Jobs:    envs.LastingJobs,
		NoTasks: "an ssh task is a directory on the remote host (its workspace); runbox does not remove remote directories",
	}
}
