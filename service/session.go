package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
)

// SessionOptions describe a [Session].
type SessionOptions struct {
	// ID names the session. Empty means a random id.
	ID string
	// Backend runs its commands. Empty means the configured backend.
	Backend string
	// Spec opens its environment.
	Spec envs.Spec
	// Asker answers the gate's questions for this session. Nil means
	// nobody can: commands that need approval are refused.
	Asker approval.Asker
	// Dir is where a relative path in a command points while the
	// environment is not open yet (the gate resolves paths against it).
	// Empty means Spec.Dir.
	Dir string
	// Prepare, when set, runs once on the environment when the first
	// command opens it: after that command was admitted and before it
	// runs (runbox run --sync pushes the workspace there). An error
	// closes the environment and fails the command. It must not call the
	// session's methods.
	Prepare func(context.Context, envs.Environment) error
	// TerminalInput says a person types the stdin of the processes that
	// Start returns, at a terminal (runbox run --pty): keys go through
	// as typed, not held and judged line by line, since the person
	// typing is the one the gate would ask. Piped input (Command.Stdin)
	// is judged all the same.
	TerminalInput bool
	// RecordChanges records what each command changes in the session's
	// workspace, for undo (package undo; see [Session.Undo]). Front ends
	// set it from workspace.changes and their own default
	// (config.WorkspaceConf.ChangesOn).
	RecordChanges bool
	// ChangesAsked says the user asked for the record (run --changes):
	// a session that cannot keep one then says why in its first result.
	// Otherwise (a front end's default) only Undo says it.
	ChangesAsked bool
}

// Session is an environment with an id and a lifetime: the thing a
// server holds across calls. Its environment is opened by the first
// command (so a session that never runs anything costs nothing) and kept
// until Close, so cd and export in one command are seen by the next.
type Session struct {
	ID      string
	Backend string
	Created time.Time

	svc      *Service
	spec     envs.Spec
	ask      approval.Asker
	dir      string
	prepare  func(context.Context, envs.Environment) error
	terminal bool

	recordChanges bool
	changesAsked  bool
	changes       journal  // changes.go
	jobSteps      jobSteps // jobchanges.go

	mu     sync.Mutex
	env    envs.Environment
	closed bool
	awake  awake // the sandbox kept from its idle clock (awake.go)
}

// NewSession registers a session. Its environment opens with its first
// command.
func (s *Service) NewSession(opts SessionOptions) (*Session, error) {
	id := opts.ID
	if id == "" {
		id = randomID()
	}
	backend := opts.Backend
	if backend == "" {
		backend = s.opts.Config.Backend
	}
	if _, err := s.providers.Lookup(backend); err != nil {
		return nil, err
	}
	ss := &Session{ID: id, Backend: backend, Created: time.Now(), svc: s, spec: opts.Spec, ask: opts.Asker,
		dir: cmp.Or(opts.Dir, opts.Spec.Dir), prepare: opts.Prepare, terminal: opts.TerminalInput,
		recordChanges: opts.RecordChanges, changesAsked: opts.ChangesAsked}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("service: new session: %w", envs.ErrClosed)
	}
	if _, dup := s.sessions[id]; dup {
		return nil, fmt.Errorf("service: session %s already exists", id)
	}
	s.sessions[id] = ss
	return ss, nil
}

// Session returns the open session named id.
func (s *Service) Session(id string) (*Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	return ss, ok
}

// Env returns the session's environment, opening it on first use.
func (ss *Session) Env(ctx context.Context) (envs.Environment, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, fmt.Errorf("session %s: %w", ss.ID, envs.ErrClosed)
	}
	if ss.env == nil {
		env, err := ss.svc.open(ctx, ss.Backend, ss.spec)
		if err != nil {
			return nil, err
		}
		if sb := sandboxOf(env); sb != nil {
			sb.setAsker(ss.ask, ss.ID)
		}
		if ss.prepare != nil {
			if err := ss.prepare(ctx, env); err != nil {
				env.Close(context.WithoutCancel(ctx))
				return nil, err
			}
		}
		ss.env = env
	}
	return ss.env, nil
}

// authorize judges the command line text for this session. Before the
// environment is open, the provider's reported capabilities decide host
// access; after, the environment's own.
func (ss *Session) authorize(ctx context.Context, text string) error {
	host, dir := ss.hostAccess(ctx)
	return ss.svc.Authorize(ctx, Authorization{Command: text, Backend: ss.Backend, HostAccess: host, SessionKey: ss.ID, Asker: ss.ask, Dir: dir, Sandbox: ss.sandbox()})
}

// sandbox is the confinement the session's next command runs under, as
// the gate is told of it: the open environment's, else the one a local
// environment would get (none for other backends).
func (ss *Session) sandbox() approval.Sandbox {
	ss.mu.Lock()
	env := ss.env
	ss.mu.Unlock()
	if env != nil {
		return gateSandbox(policyOf(env))
	}
	return ss.svc.GateSandbox(ss.Backend, ss.spec)
}

// hostAccess reports whether the session's commands can touch this
// machine and, if so, the directory a relative path points to.
func (ss *Session) hostAccess(ctx context.Context) (host bool, dir string) {
	ss.mu.Lock()
	env := ss.env
	ss.mu.Unlock()
	if env != nil {
		host = env.Capabilities().State(envs.CapHostAccess) != envs.Unsupported
		if c, ok := env.(interface{ Cwd() string }); ok && host {
			dir = c.Cwd() // where a relative path in the command points
		}
		return host, dir
	}
	host = ss.svc.HostAccess(ctx, ss.Backend, ss.spec)
	if host {
		dir = ss.dir
	}
	return host, dir
}

// Admit is what every command passes before a backend sees it, whichever
// front end it came from: a valid shape, then the gate (which knows the
// sandbox the command will run under), then the session's environment.
// The Admitted command runs once, by Start, or by Run when the backend
// cannot stream it; its piped stdin is judged as the command reads it.
func (ss *Session) Admit(ctx context.Context, c envs.Command) (*Admitted, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := ss.authorize(ctx, CommandLine(c)); err != nil {
		return nil, err
	}
	env, err := ss.Env(ctx)
	if err != nil {
		return nil, err
	}
	return &Admitted{ss: ss, env: env, c: ss.svc.defaults(c)}, nil
}

// Admitted is a command the gate let through. It runs at most once; the
// fields the gate judged (the command line, its directory, its
// environment) cannot change between admission and run.
type Admitted struct {
	ss   *Session
	env  envs.Environment
	c    envs.Command
	mu   sync.Mutex
	used bool
	// judged is the stdin Start judged before the backend said it
	// cannot stream: Run runs on it, not judging (or asking) twice.
	judged *judgedStdin
}

// judgedStdin is a command's stdin that passed gateStdin: the context a
// refused statement of a stream cancels, and its release.
type judgedStdin struct {
	refused context.Context
	done    func() error
}

// ErrAdmissionUsed is returned when an Admitted command is run twice, or
// with a command other than the one judged.
var ErrAdmissionUsed = errors.New("service: an admitted command runs once, as it was judged")

// take hands out the admitted command, with tune's changes to what the
// gate did not judge (output limit, PTY size, timeout), once.
func (a *Admitted) take(tune func(*envs.Command)) (envs.Command, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used {
		return envs.Command{}, ErrAdmissionUsed
	}
	c := a.c
	if tune != nil {
		tune(&c)
		if CommandLine(c) != CommandLine(a.c) || c.Dir != a.c.Dir || !maps.Equal(c.Env, a.c.Env) || c.Stdin != a.c.Stdin {
			return envs.Command{}, ErrAdmissionUsed
		}
	}
	a.used = true
	return c, nil
}

// Run runs the admitted command to completion. Its piped stdin (c.Stdin)
// is judged the way the command reads it (see gateStdin): input that ends
// is judged whole first, and a refusal there returns a *StdinRefusedError
// with nothing run; in a stream, the command is killed at the first
// refused statement, and Run returns its result with a
// *StdinRefusedError. tune, if not nil, may change what the gate did not
// judge.
func (a *Admitted) Run(ctx context.Context, tune func(*envs.Command)) (*envs.Result, error) {
	c, err := a.take(tune)
	if err != nil {
		return nil, err
	}
	var (
		run  context.Context
		done func() error
	)
	if j := a.judged; j != nil {
		// Judged by Start already: its stream refusals end this run.
		var cancel context.CancelFunc
		run, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(j.refused, cancel)
		defer func() { stop(); cancel() }()
		done = j.done
	} else if run, done, err = a.ss.gateStdin(ctx, &c); err != nil {
		return nil, err
	}
	rec, warn := a.ss.beginChanges(ctx, c)
	res, err := a.env.Run(run, c)
	endChanges(ctx, rec, warn, res)
	if rerr := done(); rerr != nil {
		return res, rerr
	}
	return res, err
}

// Start starts the admitted command. What is written to the process's
// stdin is judged too, line by line (see [GatedInput]; not with
// SessionOptions.TerminalInput), and so is c.Stdin as the command reads
// it: at the first refused line the process is killed, and its Wait
// returns a *StdinRefusedError. When the backend cannot stream
// (envs.ErrUnsupported), the admission stays unused: the caller may Run
// it instead, without a second judgement (or question to the user).
func (a *Admitted) Start(ctx context.Context, tune func(*envs.Command)) (envs.Process, error) {
	c, err := a.take(tune)
	if err != nil {
		return nil, err
	}
	// The stdin is read, and judged, for the process's whole life, not
	// only while ctx bounds the start.
	refused, done, err := a.ss.gateStdin(context.WithoutCancel(ctx), &c)
	if err != nil {
		return nil, err
	}
	rec, warn := a.ss.beginChanges(ctx, c)
	p, err := a.env.Start(ctx, c)
	if err != nil {
		if rec != nil {
			rec.End(context.WithoutCancel(ctx)) // nothing ran: an empty step
		}
		if !errors.Is(err, envs.ErrUnsupported) {
			done()
			return nil, err
		}
		// Run may take it from here, on the stdin judged already.
		a.mu.Lock()
		a.used = false
		a.c.Stdin, a.judged = c.Stdin, &judgedStdin{refused: refused, done: done}
		a.mu.Unlock()
		return nil, err
	}
	gp := &gatedProcess{Process: p, done: done}
	if judge := a.ss.inputJudge(c); a.ss.terminal || judge == nil {
		gp.raw = true
	} else if w := p.Stdin(); w != nil {
		gp.in = &GatedInput{w: w, judge: judge}
	}
	if c.Stdin != nil {
		gp.stop = context.AfterFunc(refused, func() { p.Kill(context.Background()) })
	}
	if rec != nil || warn != "" {
		return &changeProcess{Process: gp, rec: rec, warn: warn}, nil
	}
	return gp, nil
}

// Run judges c, then runs it in the session's environment (see
// [Session.Admit] and [Admitted.Run]).
func (ss *Session) Run(ctx context.Context, c envs.Command) (*envs.Result, error) {
	a, err := ss.Admit(ctx, c)
	if err != nil {
		return nil, err
	}
	return a.Run(ctx, nil)
}

// markPrivate sets c.Private when its text holds a secret value this
// service was started with, so no backend puts it in an argv.
func (s *Service) markPrivate(c *envs.Command) {
	if !c.Private && c.Shell != "" {
		c.Private = s.HoldsSecret(c.Shell)
	}
}

// Start judges c, then starts it (see [Session.Admit] and
// [Admitted.Start]).
func (ss *Session) Start(ctx context.Context, c envs.Command) (envs.Process, error) {
	a, err := ss.Admit(ctx, c)
	if err != nil {
		return nil, err
	}
	return a.Start(ctx, nil)
}

// Input wraps w so that every line written is judged first.
func (ss *Session) Input(w WriteCloser) *GatedInput {
	if w == nil {
		return nil
	}
	return &GatedInput{w: w, judge: ss.authorize}
}

// Close tears down the session's environment and forgets the session.
func (ss *Session) Close(ctx context.Context) error {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	env := ss.env
	ss.mu.Unlock()
	ss.stopAwake()
	ss.closeJobSteps() // their last checkpoints need the journal
	ss.closeJournal()
	ss.svc.mu.Lock()
	delete(ss.svc.sessions, ss.ID)
	ss.svc.mu.Unlock()
	if env == nil {
		return nil
	}
	return env.Close(ctx)
}

// defaults fills a command's timeout and output limit from the
// configuration where it sets none.
func (s *Service) defaults(c envs.Command) envs.Command {
	s.markPrivate(&c)
	if c.Timeout == 0 {
		c.Timeout = s.Timeout()
	}
	if c.OutputLimit == 0 {
		c.OutputLimit = s.OutputLimit()
	}
	return c
}

func randomID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
