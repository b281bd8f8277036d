package remote

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

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/envs"
)

// DefaultAgentDir is where the agent is put in a sandbox when
// Options.AgentDir is empty.
const DefaultAgentDir = "/.runbox"

// DefaultHandshakeTimeout bounds connecting to a freshly started agent
// when Options.HandshakeTimeout is zero.
const DefaultHandshakeTimeout = 30 * time.Second

// Options configures an [Env].
type Options struct {
	// Name names the backend at the start of errors ("docker"). Required.
	Name string
	// Kind is what one sandbox is called in messages ("container"). Empty
	// means "sandbox".
	Kind string
	// AgentBinary is the static agent binary to deploy (a runbox-agent
	// build, or a full runbox, which serves the same as `runbox agent`).
	// Empty means [Agent]().Find for the sandbox's architecture.
	AgentBinary string
	// SourceDir is the runbox module's root, to build the agent from.
	// Empty means: search upward from the current directory.
	SourceDir string
	// AgentDir is the directory in the sandbox the agent is copied into.
	// Empty means [DefaultAgentDir].
	AgentDir string
	// NoAgent skips the agent and runs every command with the sandbox's
	// native exec (an error when it has none). False tries the agent
	// first and falls back, visibly, when it cannot run.
	NoAgent bool
	// NoAgentReason says why NoAgent is set, in the fallback's warning and
	// Fallback ("the toolbox gives no byte stream to a process"). Empty
	// means "agent disabled by Options.NoAgent".
	NoAgentReason string
	// Env is laid over every command's environment. It travels with each
	// command (over the agent protocol, or to the native exec), never in
	// the sandbox's configuration. Nil adds nothing.
	Env map[string]string
	// HandshakeTimeout bounds connecting to a started agent. Zero means
	// [DefaultHandshakeTimeout].
	HandshakeTimeout time.Duration
	// ReplyTimeout bounds waits for answers the agent owes at once (see
	// agent.ClientOptions). Zero means agent.DefaultReplyTimeout.
	ReplyTimeout time.Duration
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
	// CLI makes the full runbox CLI runnable in the sandbox at
	// [Env.CLIPath] (for the job daemon of the sandbox's own jobs): it is
	// copied in before the first command that runs it. False leaves
	// CLIPath empty.
	CLI bool
	// CLIBinary is the static runbox CLI to copy in. Empty means
	// [CLI]().Find for the sandbox's architecture.
	CLIBinary string
}

// Env is an [envs.Environment] and [envs.FileTransfer] in a [Sandbox],
// with the runbox agent inside when it can run there. It is safe for
// concurrent use.
type Env struct {
	sb   Sandbox
	opts Options
	log  *slog.Logger

	mu        sync.Mutex // serialises setup; guards the fields below
	closed    bool
	id        string            // the sandbox's id, once provisioned
	be        envs.Environment  // the agent client or the native exec; nil until set up, and after a loss
	agent     *agent.Client     // be, when it is the agent
	fallback  string            // why the agent is not used ("" when it is)
	caps      envs.Capabilities // what be reported when it was set up
	recreated bool              // the next result reports a recreated environment
	digests   map[string]string // binary path, size and mtime → content digest
	arch      string            // the sandbox's architecture, as Provision said
	cli       string            // where this setup put the runbox CLI ("" until a command needs it)
}

var _ envs.Environment = (*Env)(nil)
var _ envs.FileTransfer = (*Env)(nil)

// New provisions the sandbox, deploys the agent and connects to it (or
// sets up the native exec, saying why). ctx bounds all of that. When it
// fails after the sandbox was provisioned, the sandbox is released as
// Close would release it, so nothing is left running for nobody.
func New(ctx context.Context, sb Sandbox, opts Options) (*Env, error) {
	o := opts
	if o.Name == "" {
		return nil, fmt.Errorf("remote: Options.Name is required: %w", envs.ErrBadCommand)
	}
	if o.Kind == "" {
		o.Kind = "sandbox"
	}
	if o.AgentDir == "" {
		o.AgentDir = DefaultAgentDir
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	o.Env = maps.Clone(o.Env)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Env{sb: sb, opts: o, log: log, digests: map[string]string{}}
	e.mu.Lock()
	_, err := e.setupLocked(ctx)
	e.recreated = false // the first setup is a creation, not a recreation
	id := e.id
	e.mu.Unlock()
	if err != nil {
		if id != "" {
			if rerr := sb.Release(context.WithoutCancel(ctx), id); rerr != nil {
				err = errors.Join(err, fmt.Errorf("%s: release %s after the failed start: %w", o.Name, o.Kind, rerr))
			}
		}
		return nil, err
	}
	return e, nil
}

// ID is the id of the sandbox commands currently run in.
func (e *Env) ID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id
}

// KeepAwake tells the sandbox's provider to keep it running, or lets its
// idle clock run again ([envs.Waker]); ErrUnsupported when the backend's
// sandboxes have no such clock that runbox can turn off.
func (e *Env) KeepAwake(ctx context.Context, on bool) error {
	w, ok := e.sb.(envs.Waker)
	if !ok {
		return fmt.Errorf("remote: keep awake: %w", envs.ErrUnsupported)
	}
	return w.KeepAwake(ctx, on)
}

// Fallback says why commands run through the sandbox's native exec rather
// than the agent; empty when the agent is in use.
func (e *Env) Fallback() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fallback
}

// setupLocked provisions the sandbox and connects to its agent (or sets
// up the native exec). Called with e.mu held.
func (e *Env) setupLocked(ctx context.Context) (envs.Environment, error) {
	again := e.id != ""
	e.dropBackendLocked()
	inst, err := e.sb.Provision(ctx)
	if err != nil {
		return nil, err
	}
	e.id = inst.ID
	e.arch = inst.Arch
	e.cli = "" // a recreated sandbox gets the CLI again when a command needs it
	e.recreated = again
	be, err := e.connectLocked(ctx, inst)
	if err != nil {
		return nil, err
	}
	e.be = be
	e.caps = be.Capabilities()
	return be, nil
}

// ensure returns a live backend, provisioning the sandbox and its agent
// again when they are gone. recreated is true when that happened since the
// last command reported it.
func (e *Env) ensure(ctx context.Context) (envs.Environment, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	be, err := e.liveLocked(ctx)
	if err != nil {
		return nil, false, err
	}
	rec := e.recreated
	e.recreated = false
	return be, rec, nil
}

// liveLocked is ensure without taking the recreation notice, which the
// next command's result reports. Called with e.mu held.
func (e *Env) liveLocked(ctx context.Context) (envs.Environment, error) {
	if e.closed {
		return nil, fmt.Errorf("%s: %w", e.opts.Name, envs.ErrClosed)
	}
	be := e.be
	if be == nil || e.agent != nil && e.agent.Err() != nil {
		var err error
		if be, err = e.setupLocked(ctx); err != nil {
			return nil, err
		}
	}
	return be, nil
}

// lost marks the backend dead after a command found the sandbox or its
// agent gone, so the next command sets it up again, and returns the error
// that command reports.
func (e *Env) lost(ctx context.Context, be envs.Environment, op string, err error) error {
	return e.lostIn(ctx, be, e.ID(), op, err)
}

// lostIn is lost for a command that ran in sandbox id: a started command
// may be waited for after another command has set a new sandbox up.
func (e *Env) lostIn(ctx context.Context, be envs.Environment, id, op string, err error) error {
	e.mu.Lock()
	if e.be == be {
		e.dropBackendLocked()
	}
	e.mu.Unlock()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if x, ok := e.sb.(Explainer); ok {
		// The explanation names the backend itself ("docker: container …").
		return fmt.Errorf("%w, during %s; the next command recreates the environment: %w", x.Explain(dctx, id), op, err)
	}
	state := e.sb.Describe(dctx, id)
	return fmt.Errorf("%s: %s: %s; the next command recreates the environment: %w", e.opts.Name, op, state, err)
}

// lostProcess is a started command whose Wait, when the sandbox or its
// agent is lost under it, says what became of its sandbox, as a Run would.
type lostProcess struct {
	envs.Process
	e  *Env
	be envs.Environment
	id string // the sandbox it runs in
}

func (p *lostProcess) Wait(ctx context.Context) (envs.ExitStatus, error) {
	st, err := p.Process.Wait(ctx)
	if err != nil && isLost(err) {
		err = p.e.lostIn(ctx, p.be, p.id, "wait", err)
	}
	return st, err
}

func (e *Env) dropBackendLocked() {
	if e.be != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		e.be.Close(ctx)
		cancel()
	}
	e.be, e.agent = nil, nil
}

// Ping checks that the agent is in use and answers, without provisioning
// anything: an error means the next command would not find this
// environment as it was set up (the agent is lost, the sandbox is gone,
// or commands run through the native exec). A pool asks this before it
// hands out an environment it made earlier.
func (e *Env) Ping(ctx context.Context) error {
	e.mu.Lock()
	cl, closed, fb := e.agent, e.closed, e.fallback
	e.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("%s: %w", e.opts.Name, envs.ErrClosed)
	case cl == nil && fb != "":
		return fmt.Errorf("%s: the agent is not in use (%s): %w", e.opts.Name, fb, envs.ErrUnsupported)
	case cl == nil:
		return fmt.Errorf("%s: the agent is gone: %w", e.opts.Name, agent.ErrLost)
	}
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("%s: ping the agent: %w", e.opts.Name, err)
	}
	return nil
}

// isLost reports whether err means the sandbox or the agent is gone.
func isLost(err error) bool {
	return errors.Is(err, agent.ErrLost) || errors.Is(err, ErrGone)
}

// overlay lays Options.Env under the command's own.
func (e *Env) overlay(cmd envs.Command) envs.Command { return Overlay(e.opts.Env, cmd) }

// Overlay returns cmd with base laid under its own variables: a variable
// the command sets wins over base's.
func Overlay(base map[string]string, cmd envs.Command) envs.Command {
	if len(base) == 0 {
		return cmd
	}
	m := maps.Clone(base)
	maps.Copy(m, cmd.Env)
	cmd.Env = m
	return cmd
}

// Run runs cmd in the sandbox. If the sandbox or its agent is gone
// mid-command, Run fails at once with an error that says what became of
// the sandbox; the next command provisions it again, and its Result says
// EnvironmentRecreated, with a warning that session state was reset.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("%s: run: %w", e.opts.Name, err)
	}
	be, rec, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if cmd, err = e.withCLI(ctx, be, cmd); err != nil {
		return nil, err
	}
	res, err := be.Run(ctx, e.overlay(cmd))
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "run", err)
		}
		return nil, fmt.Errorf("%s: run: %w", e.opts.Name, err)
	}
	if rec {
		res.EnvironmentRecreated = true
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s was gone and has been recreated; session state (cwd, variables) was reset", e.opts.Kind))
	}
	if fb := e.Fallback(); fb != "" {
		res.Warnings = append(res.Warnings, "degraded: commands run without the runbox agent ("+fb+")")
	}
	return res, nil
}

// Start starts cmd in the sandbox. Without the agent, the native exec may
// not stream processes (envs.ErrUnsupported).
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("%s: start: %w", e.opts.Name, err)
	}
	be, _, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if cmd, err = e.withCLI(ctx, be, cmd); err != nil {
		return nil, err
	}
	p, err := be.Start(ctx, e.overlay(cmd))
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "start", err)
		}
		if fb := e.Fallback(); fb != "" && errors.Is(err, envs.ErrUnsupported) {
			return nil, fmt.Errorf("%s: start: %w (the agent is not in use: %s)", e.opts.Name, err, fb)
		}
		return nil, fmt.Errorf("%s: start: %w", e.opts.Name, err)
	}
	return &lostProcess{Process: p, e: e, be: be, id: e.ID()}, nil
}

// Capabilities reports what this environment enforces: the agent's
// guarantees inside the sandbox (or the native exec's, in the fallback),
// with what the sandbox itself enforces laid over them.
func (e *Env) Capabilities() envs.Capabilities {
	e.mu.Lock()
	caps, agentUsed := maps.Clone(e.caps), e.fallback == ""
	e.mu.Unlock()
	if caps == nil {
		caps = envs.Capabilities{}
	}
	if agentUsed {
		markAgent(caps)
	}
	e.sb.Capabilities(caps)
	return caps
}

// AgentCapabilities is what the agent guarantees inside any sandbox it
// runs in, for reports made without creating one (`runbox doctor`). A
// backend lays its sandbox's own capabilities over it.
func AgentCapabilities() envs.Capabilities {
	caps := envs.Capabilities{
		envs.CapTreeKill:     {State: envs.Active, Detail: "the agent's process-group teardown inside the sandbox"},
		envs.CapPTY:          {State: envs.Active, Detail: "agent"},
		envs.CapStdin:        {State: envs.Active, Detail: "agent"},
		envs.CapSignals:      {State: envs.Active, Detail: "agent"},
		envs.CapSessionState: {State: envs.Active, Detail: "agent (bash in the image; cwd and exports only with sh)"},
		envs.CapFileTransfer: {State: envs.Active, Detail: "agent"},
		envs.CapUndo:         {State: envs.Active, Detail: "the agent records each command's workspace changes inside the sandbox"},
	}
	markAgent(caps)
	return caps
}

// markAgent adds what holds for every agent in a sandbox, whatever it
// reports about itself.
func markAgent(caps envs.Capabilities) {
	caps[envs.CapDurableOutput] = envs.CapInfo{State: envs.Degraded, Detail: "spill files live inside the sandbox"}
}

// Close stops what the agent still runs, then releases the sandbox (the
// backend stops, removes or keeps it, as its options say).
func (e *Env) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var errs []error
	if e.be != nil {
		if err := e.be.Close(ctx); err != nil && !isLost(err) {
			errs = append(errs, err)
		}
	}
	e.be, e.agent = nil, nil
	id := e.id
	e.mu.Unlock()
	if id != "" {
		errs = append(errs, e.sb.Release(ctx, id))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: close: %w", e.opts.Name, err)
	}
	return nil
}

// PutFile writes r to path in the sandbox (through the agent, or the
// native exec's file transfer in the fallback).
func (e *Env) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	be, _, err := e.ensure(ctx)
	if err != nil {
		return err
	}
	ft, ok := be.(envs.FileTransfer)
	if !ok {
		return fmt.Errorf("%s: put %s: no file transfer without the agent: %w", e.opts.Name, path, envs.ErrUnsupported)
	}
	if err := ft.PutFile(ctx, path, r, perm); err != nil {
		if isLost(err) {
			return e.lost(ctx, be, "put "+path, err)
		}
		return fmt.Errorf("%s: put %s: %w", e.opts.Name, path, err)
	}
	return nil
}

// GetFile opens path in the sandbox for reading.
func (e *Env) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	be, _, err := e.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ft, ok := be.(envs.FileTransfer)
	if !ok {
		return nil, fmt.Errorf("%s: get %s: no file transfer without the agent: %w", e.opts.Name, path, envs.ErrUnsupported)
	}
	r, err := ft.GetFile(ctx, path)
	if err != nil {
		if isLost(err) {
			return nil, e.lost(ctx, be, "get "+path, err)
		}
		return nil, fmt.Errorf("%s: get %s: %w", e.opts.Name, path, err)
	}
	return r, nil
}
