package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/local/internal/shellstate"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/termination"
)

var errClosed = envs.ErrClosed

// process is one started command. Its waiter goroutine (started by start)
// closes done after the exit is known and the output drained; teardown runs
// in the goroutine that calls Kill or in the context watcher, and the waiter
// waits for it, so every goroutine ends by the time done is closed (except
// the output copier of a streaming process whose reader is never drained,
// which release stops).
type process struct {
	env     *Env
	cmd     *exec.Cmd
	proc    termination.Proc
	cont    termination.Container
	files   sessionFiles
	isShell bool
	dirSet  bool
	ptyFile *os.File
	denials *denials // connects the sandbox refused it, as confine decided them

	stdin   io.WriteCloser
	output  io.Reader
	stderr  io.Reader
	closers []io.Closer // timers and watchers released when the process ends
	readers []io.Closer // the streaming readers handed out by Start; closed only by Env.Close

	parentEnds []*os.File // child's ends, closed in the parent after start
	readMu     sync.Mutex
	readEnds   []*os.File       // parent's read ends, cut (see drain) and closed at release
	pending    []func()         // copiers to start once the process runs
	ptySize    *envs.WindowSize // set in PTY mode
	ptyIn      io.Reader        // Command.Stdin in PTY mode
	ptyOut     *envs.Capture
	report     *os.File // the subreaper's report pipe, when it runs under one
	reportDone chan subreaper.Report
	exitedOK   atomic.Bool // the command exited before a timeout or interrupt fired
	leftovers  int         // processes the subreaper killed after the command exited
	contEmpty  bool        // the container was found empty after the command exited
	contGone   bool        // clearLeftovers emptied the container and removed it (or gave it to the reaper)
	onWarm     bool        // it ran on a warm shell, in the container made for that shell

	started   time.Time
	ctx       context.Context // the command's own context (timeout)
	cancel    context.CancelCauseFunc
	stopWatch func() bool

	killOnce sync.Once
	killErr  error
	killDone chan struct{}
	killed   atomic.Bool // Kill was called (not a timeout/interrupt)

	copiers   sync.WaitGroup
	outputCut atomic.Bool // a copier stopped while a writer still held its pipe (see drain)
	done      chan struct{}
	status    envs.ExitStatus
	waitErr   error

	// Set by the waiter before done is closed.
	cwdAfter string
	dir      string // the directory it was started in
	duration time.Duration
	warnings []string
}

var _ envs.Process = (*process)(nil)

// start launches cmd. For Run, out (and errc with SeparateStreams) receive
// the output; for Start both are nil and the process exposes readers.
// A non-nil Result means the command ended before it started (bad cwd,
// command not found) and that Result is its outcome.
func (e *Env) start(ctx context.Context, c envs.Command, out, errc *envs.Capture) (*process, *envs.Result, error) {
	files, cwd, err := e.newSessionFiles(c.Shell != "" && shellstate.Unchanging(c.Shell))
	if err != nil {
		return nil, nil, err
	}
	p := &process{env: e, files: files, isShell: c.Shell != "", done: make(chan struct{}), killDone: make(chan struct{})}
	owned := false // the process took its session files over
	defer func() {
		if !owned {
			e.releaseState(files)
			os.Remove(files.script())
		}
	}()
	dir, warn, res := e.resolveDir(cwd, c.Dir)
	if res != nil {
		return nil, res, nil
	}
	p.dirSet, p.dir = c.Dir != "", dir
	if warn != "" {
		p.warnings = append(p.warnings, warn)
	}
	cs := &coldStart{e: e, ctx: ctx, p: p, c: c, out: out, errc: errc, dir: dir, limits: e.opts.Limits}
	if cs.env, cs.sres, err = e.childEnv(c.Env); err != nil {
		return nil, nil, err
	}
	if !c.Limits.IsZero() {
		cs.limits = *c.Limits
	}
	if owned, err = e.tryWarm(cs); err != nil {
		return nil, nil, err
	}
	if !owned {
		owned, res, err = e.startCold(cs)
	}
	if err != nil || res != nil {
		return nil, res, err
	}
	return p, nil, nil
}

// tryWarm runs the command on a warm shell when it fits one and one is
// there to take. owned is true when it runs; false with a nil error, it
// is to start cold.
func (e *Env) tryWarm(cs *coldStart) (owned bool, err error) {
	c := cs.c
	if !e.warmFits(c, cs.out, cs.errc, cs.limits) || !e.warmEnv(cs.env, c.Env) {
		return false, nil
	}
	w := e.takeWarm(cs.ctx, cs.env, len(c.Env) > 0)
	if w == nil {
		return false, nil
	}
	return e.runWarm(cs.ctx, cs.p, c, w, cs.out, cs.dir)
}

// coldStart is a command started cold: its launch plan's hooks (see
// plan.go) and what they share.
type coldStart struct {
	e         *Env
	ctx       context.Context
	p         *process
	c         envs.Command
	out, errc *envs.Capture
	dir       string
	env       []string
	sres      *spawn.Result
	limits    envs.Limits

	pl    *plan
	gate  *launch.Barrier
	res   *envs.Result // the outcome of a command that ended before it started
	owned bool         // the process took the start over (own)
}

// errNotStarted stops the plan of a command that ended before it
// started: its outcome is coldStart.res, not an error.
var errNotStarted = errors.New("local: ended before it started")

// startCold starts the command through its launch plan. owned is true
// once the process holds the start (then its waiter releases it all).
func (e *Env) startCold(cs *coldStart) (owned bool, res *envs.Result, err error) {
	var dn *denials
	if e.sandbox.policy != nil {
		dn = &denials{}
	}
	cs.pl = &plan{e: e, ctx: cs.ctx, limits: cs.limits, denials: dn, hooks: planHooks{
		hold: cs.hold, build: cs.build, confine: cs.confine, wire: cs.wire,
		start: cs.start, own: cs.own, settle: cs.admit,
	}}
	err = cs.pl.run()
	switch {
	case errors.Is(err, errNotStarted):
		return false, cs.res, nil
	case err != nil:
		return cs.owned, nil, err
	}
	go cs.p.wait()
	return true, nil, nil
}

// hold makes the start barrier of a command that has a container to be
// placed in before it runs.
func (cs *coldStart) hold() error {
	if cs.pl.cont == nil {
		return nil
	}
	gate, err := launch.NewBarrier()
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	cs.gate, cs.pl.held = gate, true
	cs.pl.onFail(gate.Close)
	return nil
}

func (cs *coldStart) build() error {
	xc, res, err := cs.e.command(cs.c, cs.p.files, cs.dir, cs.env, cs.sres, cs.gate != nil)
	if err != nil {
		return err
	}
	if res != nil {
		cs.res = res
		return errNotStarted
	}
	cs.pl.xc = xc
	return nil
}

// confine wraps the command in the trampoline, and hands it its barrier.
func (cs *coldStart) confine() (*confine.Handover, error) {
	h, err := cs.e.confineCmd(cs.pl.xc)
	if err == nil && cs.gate != nil {
		cs.pl.xc.ExtraFiles = []*os.File{cs.gate.File()}
	}
	return h, err
}

// wire connects the command's input and output and gives it its own
// context.
func (cs *coldStart) wire() error {
	p := cs.p
	p.cmd = cs.pl.xc
	cs.pl.onFail(p.unwire)
	if err := p.wire(cs.c, cs.out, cs.errc); err != nil {
		return err
	}
	// The caller's ctx interrupts the command (exit 130) only for Run;
	// a started process outlives the ctx that started it.
	p.watchContext(cs.ctx, cs.c.Timeout, cs.out != nil)
	return nil
}

// start starts the command. A start that fails is the command's outcome
// (126/127), not an error.
func (cs *coldStart) start() error {
	cs.p.started = time.Now()
	if err := cs.p.startOS(); err != nil {
		cs.res = cs.e.startFailure(cs.c, err)
		return errNotStarted
	}
	return nil
}

// own hands the started command to its process: tracked, and torn down
// when its context ends. Should admitting it fail, its barrier stays
// shut: it exits having run nothing, and its waiter releases the rest.
func (cs *coldStart) own() func() {
	p, pl := cs.p, cs.pl
	p.cont, p.report, p.proc, p.denials = pl.cont, pl.report, pl.proc, pl.denials
	p.warnings = append(p.warnings, pl.warnings...)
	cs.e.track(p)
	cs.owned = true
	p.watch()
	return func() {
		cs.gate.Close()
		p.wait()
	}
}

// admit places the command in its container and lets it run. With
// limits it must run inside its container or not at all: its barrier
// stays shut, and the caller gets the error once it is reaped (abort).
func (cs *coldStart) admit() error {
	cs.gate.Started()
	required := !cs.limits.IsZero()
	if err := cs.gate.Admit(cs.ctx, cs.p.cont, cs.p.cmd.Process.Pid, required); err != nil {
		if required {
			return fmt.Errorf("local: %w", err)
		}
		cs.p.warnings = append(cs.p.warnings, "containment failed: "+err.Error())
	}
	return nil
}

// watchContext gives the process a context of its own, which its
// timeout ends and, with interrupt, the caller's ctx cancels.
func (p *process) watchContext(ctx context.Context, timeout time.Duration, interrupt bool) {
	p.ctx, p.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	if timeout > 0 {
		var cancelT context.CancelFunc
		p.ctx, cancelT = context.WithTimeoutCause(p.ctx, timeout, envs.ErrTimeout)
		p.closers = append(p.closers, closerFunc(func() error { cancelT(); return nil }))
	}
	if interrupt {
		stop := context.AfterFunc(ctx, func() { p.cancel(context.Canceled) })
		p.closers = append(p.closers, closerFunc(func() error { stop(); return nil }))
	}
}

// unwire undoes wire and watchContext for a command that does not start.
func (p *process) unwire() {
	p.closeParentEnds()
	p.closeReadEnds()
	for _, c := range p.closers {
		c.Close()
	}
	if p.cancel != nil {
		p.cancel(nil)
	}
}

// watch tears the process down when its context ends, and reads the
// subreaper's report; the waiter joins the reader.
func (p *process) watch() {
	p.stopWatch = context.AfterFunc(p.ctx, func() { p.teardown(context.Background()) })
	if p.report != nil {
		p.reportDone = make(chan subreaper.Report, 1)
		go p.readReport()
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// containerID names the container of the next command: unique across
// the environments of this process (termination refuses an id in use),
// by the random part of this one's state directory's name.
func (e *Env) containerID() string {
	return fmt.Sprintf("%d-%s-%d", os.Getpid(), strings.TrimPrefix(filepath.Base(e.stateDir), "runbox-session-"), e.nextID())
}

func (e *Env) nextID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return e.seq
}

func (e *Env) track(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running[p] = struct{}{}
}

// trackOpen tracks p unless the environment is closed, so that Close
// either kills p or p never starts.
func (e *Env) trackOpen(p *process) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.running[p] = struct{}{}
	return true
}

func (e *Env) untrack(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, p)
}

// resolveDir picks the directory a command starts in. A per-command dir
// that does not exist is exit 126; a deleted session dir falls back to its
// nearest existing ancestor.
func (e *Env) resolveDir(cwd, override string) (dir, warning string, res *envs.Result) {
	if override != "" {
		if !filepath.IsAbs(override) {
			override = filepath.Join(cwd, override)
		}
		if fi, err := os.Stat(override); err != nil || !fi.IsDir() {
			msg := fmt.Sprintf("runbox: cannot enter directory %s: %v\n", override, errNotDir(err))
			return "", "", earlyResult(envs.ExitCannotEnter, msg, cwd)
		}
		return override, "", nil
	}
	dir = cwd
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if dir != cwd {
		warning = fmt.Sprintf("working directory %s no longer exists; using %s", cwd, dir)
		e.mu.Lock()
		e.cwd = dir
		e.mu.Unlock()
	}
	return dir, warning, nil
}

func earlyResult(code int, msg, cwd string) *envs.Result {
	return &envs.Result{
		ExitStatus: envs.ExitStatus{Code: code},
		Output:     msg,
		TotalBytes: int64(len(msg)),
		Cwd:        cwd,
	}
}

// command builds the exec.Cmd. A non-nil Result means the program cannot
// be found or executed (127/126), without starting anything. An argv
// that would show a secret value is refused with a *spawn.ArgvError; a
// shell command whose text holds one (or is too long for an argument)
// goes to the shell in a private file instead (see scriptFile).
func (e *Env) command(c envs.Command, f sessionFiles, dir string, env []string, sres *spawn.Result, gate bool) (*exec.Cmd, *envs.Result, error) {
	gateArg := ""
	if gate {
		gateArg = "gate"
	}
	var xc *exec.Cmd
	if c.Shell != "" {
		user := c.Shell
		if c.Private || len(user) > maxArgScript || sres.CheckArgv([]string{user}) != nil {
			path, err := scriptFile(f, user)
			if err != nil {
				return nil, nil, err
			}
			user = ". " + shellQuote(path)
		}
		xc = e.shellCommand(user, f, dir, gateArg, env)
	} else {
		if err := sres.CheckArgv(c.Args); err != nil {
			return nil, nil, fmt.Errorf("local: refusing to start %s: %w (pass it through the environment instead)", c.Args[0], err)
		}
		path, code, err := lookPath(c.Args[0], dir, env)
		if err != nil {
			return nil, earlyResult(code, fmt.Sprintf("runbox: %s: %v\n", c.Args[0], err), dir), nil
		}
		if gate {
			args := launch.HoldArgv(path, c.Args)
			xc = exec.Command(args[0], args[1:]...)
		} else {
			xc = exec.Command(path, c.Args[1:]...)
			xc.Args[0] = c.Args[0]
		}
	}
	xc.Dir = dir
	if xc.Env == nil {
		xc.Env = env
	}
	return xc, nil, nil
}

// lookPath finds prog in the child's PATH (not this process's).
func lookPath(prog, dir string, env []string) (string, int, error) {
	check := func(p string) (string, int, error) {
		fi, err := os.Stat(p)
		if err != nil {
			return "", envs.ExitNotFound, fmt.Errorf("command not found")
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", envs.ExitCannotEnter, fmt.Errorf("permission denied")
		}
		return p, 0, nil
	}
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		return check(prog)
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p, _, err := check(filepath.Join(d, prog)); err == nil {
			return p, 0, nil
		}
	}
	return "", envs.ExitNotFound, fmt.Errorf("command not found")
}

func (e *Env) startFailure(c envs.Command, err error) *envs.Result {
	code := envs.ExitCannotEnter
	if errors.Is(err, os.ErrNotExist) {
		code = envs.ExitNotFound
	}
	name := e.shell
	if len(c.Args) > 0 {
		name = c.Args[0]
	}
	return earlyResult(code, fmt.Sprintf("runbox: cannot start %s: %v\n", name, err), e.Cwd())
}

// PID is the command's process id.
func (p *process) PID() int { return p.proc.PID }

// Stdin is the command's standard input (nil when Command.Stdin was given).
func (p *process) Stdin() io.WriteCloser { return p.stdin }

// Output streams the command's output.
func (p *process) Output() io.Reader { return p.output }

// Stderr streams stderr with SeparateStreams.
func (p *process) Stderr() io.Reader { return p.stderr }

// Signal sends sig to the command's direct process, after checking its
// identity (a recycled PID is never signalled).
func (p *process) Signal(_ context.Context, sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("local: signal %d: process exited: %w", p.proc.PID, envs.ErrNotFound)
	default:
	}
	if err := p.proc.Signal(sig); err != nil {
		return fmt.Errorf("local: signal %d: %w", p.proc.PID, err)
	}
	return nil
}

// Kill tears the command's whole tree down and waits for it to be gone.
func (p *process) Kill(ctx context.Context) error {
	select {
	case <-p.done:
	default:
		p.killed.Store(true)
	}
	p.cancel(errKilled)
	go p.teardown(context.WithoutCancel(ctx)) // joined through killDone below
	select {
	case <-p.killDone:
	case <-ctx.Done():
		return fmt.Errorf("local: kill %d: %w", p.proc.PID, ctx.Err())
	}
	if p.killErr != nil {
		return fmt.Errorf("local: kill %d: %w", p.proc.PID, p.killErr)
	}
	return nil
}

var errKilled = errors.New("local: killed")

// teardown kills the tree once; later calls wait for the first.
func (p *process) teardown(ctx context.Context) {
	p.killOnce.Do(func() {
		defer close(p.killDone)
		p.killErr = termination.KillTree(ctx, p.proc, termination.Options{
			Grace:     p.env.opts.Grace,
			Container: p.cont,
			Reaper:    p.env.reaper,
			Logger:    p.env.log,
		})
	})
}

// Wait waits for the command to exit.
func (p *process) Wait(ctx context.Context) (envs.ExitStatus, error) {
	select {
	case <-p.done:
		return p.status, p.waitErr
	case <-ctx.Done():
		return envs.ExitStatus{}, fmt.Errorf("local: wait %d: %w", p.proc.PID, ctx.Err())
	}
}

// readReport reads the subreaper's report. When the command exits by
// itself, its timeout and interrupt stop applying: what is left is
// clearing its leftovers, which is not the command running late. The
// waiter joins this goroutine (the subreaper's exit closes the pipe).
func (p *process) readReport() {
	rep, err := subreaper.ReadReport(p.report, func(subreaper.Report) {
		if p.stopWatch() {
			p.exitedOK.Store(true)
		}
	})
	if err != nil {
		rep = subreaper.Report{Code: -1}
	}
	p.reportDone <- rep
}

// wait is the process's waiter goroutine.
func (p *process) wait() {
	defer close(p.done)
	stopGit := p.watchGit()
	err := p.cmd.Wait()
	gitWarnings := stopGit()
	p.duration = time.Since(p.started)
	var rep *subreaper.Report
	if p.report != nil {
		r := <-p.reportDone
		p.report.Close()
		if r.Code >= 0 {
			rep = &r
			p.leftovers = r.Killed
		}
	}
	p.drain()
	// The command's context ended (timeout, interrupt, Kill): the
	// teardown it started must finish before the status is final.
	ended := p.ctx.Err() != nil && !p.exitedOK.Load()
	if ended {
		p.teardown(context.Background())
	}
	p.stopWatch()
	if !ended && p.cont != nil && !p.env.opts.KeepLeftovers {
		p.leftovers += p.clearLeftovers()
	}
	p.warnings = append(p.warnings, gitWarnings...)
	p.guardGit()
	p.status = p.exitStatus(err, ended, rep)
	p.status.LeftoverKilled = p.leftovers
	p.finish(ended)
	p.release()
}

// clearLeftovers tears down what the command left running in its
// container after it exited by itself (background children it did not
// wait for): the command owns what it started, and work meant to outlive
// it belongs in a background job. It returns how many there were.
func (p *process) clearLeftovers() int {
	if empty, err := p.cont.Empty(); err == nil && empty {
		p.contEmpty = true // the cheap answer, most commands' (see termination's Empty)
		return 0
	}
	procs, err := p.cont.Procs()
	if err != nil || len(procs) == 0 {
		// Nothing can enter a container that holds no process: it is
		// empty for good, and finish need not look again.
		p.contEmpty = err == nil
		return 0
	}
	// KillTree removes the container once it is empty; one it cannot
	// empty or remove goes to the reaper, which retries and reports it at
	// Close. Either way it is not this command's to keep or to recycle:
	// a removed group handed to the next shell would leave that shell
	// uncontained.
	err = termination.KillTree(context.Background(), p.proc, termination.Options{
		Grace: p.env.opts.Grace, Container: p.cont, Reaper: p.env.reaper, Logger: p.env.log,
	})
	p.contGone = true
	if err != nil {
		p.warnings = append(p.warnings, "clearing what the command left running: "+err.Error())
	}
	return len(procs)
}

func (p *process) exitStatus(err error, ended bool, rep *subreaper.Report) envs.ExitStatus {
	st, ok := launch.Status(p.cmd.ProcessState)
	if !ok {
		p.waitErr = fmt.Errorf("local: wait %d: %w", p.proc.PID, err)
		return envs.ExitStatus{Code: 1}
	}
	switch {
	case rep != nil && rep.Signal != 0:
		st = envs.SignalStatus(rep.Signal)
	case rep != nil:
		st = envs.ExitStatus{Code: rep.Code}
	}
	if ended && !p.killed.Load() {
		if cst, ok := envs.StatusFromContext(p.ctx); ok {
			st = cst
		}
	} else if ended && st.Signal == 0 && st.Code == 0 {
		st = envs.SignalStatus(syscall.SIGTERM)
	}
	if p.cont != nil {
		st = launch.LimitKilled(st, p.cont)
	}
	return st
}

// finish adopts or discards the session state and releases the container.
func (p *process) finish(ended bool) {
	e := p.env
	switch {
	case p.isShell && p.files.keep:
		// It could not leave the directory it was started in, which
		// resolveDir made the session's unless it was its own; unless
		// it could not enter it.
		if ended || p.status.Code != envs.ExitCannotEnter {
			p.cwdAfter = p.dir
		}
	case p.isShell && !ended:
		p.cwdAfter = e.adopt(p.files, p.dirSet)
	case p.isShell:
		p.cwdAfter = discard(p.files)
	}
	if p.cwdAfter == "" {
		p.cwdAfter = e.Cwd()
	}
	e.releaseState(p.files)
	os.Remove(p.files.script())
	// killErr is the teardown's to write: read only once it is done (a
	// Kill may still be tearing down while the command's end is handled).
	select {
	case <-p.killDone:
		if p.killErr != nil {
			p.warnings = append(p.warnings, "teardown: "+p.killErr.Error())
		}
	default:
	}
	if p.cont != nil && p.contGone {
		e.untrack(p)
		return
	}
	if p.cont != nil {
		empty := p.contEmpty
		if !empty {
			empty, _ = p.cont.Empty()
		}
		if empty && p.onWarm && !ended && e.recycle(p.cont) {
			e.untrack(p)
			return
		}
		if empty {
			// Removing the empty container changes nothing the caller
			// sees, so it happens after the result is handed back (Close
			// waits for it).
			cont := p.cont
			e.background(func() {
				if err := cont.Remove(context.Background()); err != nil {
					e.reaper.Add(cont) // retried, and reported by Close if it never goes
				}
			})
			e.untrack(p)
			return
		}
		// Background children are still in the container: Close kills them.
		return
	}
	e.untrack(p)
}

// release frees the parent's pipe ends and timers once the output is
// drained. The readers handed out by Start stay open: they hold no file
// and their caller may still be reading them up to EOF.
func (p *process) release() {
	p.closeReadEnds()
	for _, c := range p.closers {
		c.Close()
	}
	p.cancel(nil)
}

// abandon unblocks a copier stuck writing to a streaming reader that
// nobody reads (Env.Close).
func (p *process) abandon() {
	for _, r := range p.readers {
		r.Close()
	}
}
