package modal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	sdk "github.com/modal-labs/libmodal/modal-go"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// Env is a modal environment: the agent host over a Modal sandbox. Close
// also closes the SDK client.
type Env struct {
	*remote.Env
	sb *sandbox
	cl *sdk.Client
}

// Close ends the agent's commands, releases the sandbox (snapshot and
// terminate, or terminate) and closes the client.
func (e *Env) Close(ctx context.Context) error {
	err := e.Env.Close(ctx)
	e.sb.detachAll()
	e.cl.Close()
	return err
}

// New opens an environment in a new Modal sandbox (or the task's restored
// snapshot) with the runbox agent inside.
func New(ctx context.Context, opts Options) (*Env, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	cl, creds, err := connect(o.Getenv, o.Logger)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{cl: cl, creds: creds, opts: o, log: o.Logger, byID: map[string]*sdk.Sandbox{}}
	re, err := remote.New(ctx, sb, remote.Options{
		Name:        "modal",
		Kind:        "sandbox",
		AgentBinary: o.AgentBinary,
		AgentDir:    o.AgentDir,
		CLI:         true,
		CLIBinary:   o.CLIBinary,
		Env:         o.Env,
		Logger:      o.Logger,
	})
	if err != nil {
		sb.detachAll()
		cl.Close()
		return nil, err
	}
	return &Env{Env: re, sb: sb, cl: cl}, nil
}

// fill checks opts and fills the defaults.
func fill(opts Options) (Options, error) {
	o := opts
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.App == "" {
		o.App = DefaultApp
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.BlockNetwork && len(o.CIDRAllowlist) > 0:
		return o, fmt.Errorf("modal: block_network and a CIDR allowlist exclude each other: %w", envs.ErrBadCommand)
	case o.Timeout%time.Second != 0 || o.IdleTimeout%time.Second != 0:
		return o, fmt.Errorf("modal: timeout and idle_timeout must be whole seconds: %w", envs.ErrBadCommand)
	case o.Persistent && o.Task == "":
		return o, fmt.Errorf("modal: persistent mode needs a task to restore its snapshot: %w", envs.ErrBadCommand)
	case o.Persistent && o.StateDir == "":
		return o, fmt.Errorf("modal: persistent mode needs a state directory for its snapshot records: %w", envs.ErrBadCommand)
	}
	if o.Task == "" {
		b := make([]byte, 6)
		rand.Read(b)
		o.Task = hex.EncodeToString(b)
	}
	return o, nil
}

// Capabilities is what an environment opened with opts would report: the
// agent's (tree kill, PTY, session state, durable output) with the
// sandbox's own laid over them.
func Capabilities(opts Options) envs.Capabilities {
	o, _ := fill(opts)
	caps := remote.AgentCapabilities()
	sandboxCapabilities(o, caps)
	return caps
}

// Check says whether credentials are found and the server accepts them.
func Check(ctx context.Context, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	cl, _, err := connect(getenv, nil)
	if err != nil {
		return err
	}
	cl.Close()
	return nil
}

// Provider is the modal backend's row of a provider table; options turns
// a caller's Spec into Options.
func Provider(options func(envs.Spec) Options) envs.Provider {
	p := envs.Row("modal", "a Modal sandbox per task (Modal's Go SDK), with the runbox agent inside", options, New, checkOptions, Capabilities)
	// A task is a snapshot restored into a new sandbox: its jobs end
	// with the session that started them.
	p.Jobs, p.TaskEnvs = envs.SessionJobs, true
	return p
}

// checkOptions is Check with the environment o reads credentials from.
func checkOptions(ctx context.Context, o Options) error { return Check(ctx, o.Getenv) }
