package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// warmPrologue is the BASH_ENV file of a warm shell (read from fd 5, a
// sealed copy: see newWarmPrologue). Its start done, it closes fd 5,
// says so with a byte on fd 4 and blocks reading fd 3 until its command
// arrives there as a few assignments: the inputs a cold shell gets in
// __RB_* variables (the state as text in __rb_state, or as a file in
// __rb_in), and the command's text in __rb_cmd. The parent writes them
// once the shell is in its container, so the pipe is also the shell's
// start gate: when it closes with nothing written (the environment
// closed, or this process died) the shell exits launch.ExitBarrierClosed
// having run nothing. It then enters the command's directory without
// following symlinks before the session's own cd, as a cold shell starts
// there: OLDPWD ends up what a cold shell's would be. The EXIT trap that
// saves the state is armed before the wait, so that setting it up is not
// on the command's time; the two ways out before the command (no command,
// a directory it cannot enter) disarm it, as a cold shell has not armed
// it yet there. Its builtins' errors go to /dev/null through one
// redirection, made before the wait: each one of its own would open
// /dev/null on the command's time.
const warmPrologue = `builtin unset BASH_ENV; builtin exec 5<&-
` + warmTouch + `
` + bashSave + `builtin printf . >&4; builtin exec 4>&-
{ builtin . /dev/fd/3
builtin exec 3<&-
if [ -z "${__rb_dir+set}" ]; then builtin trap - EXIT; builtin exit 125; fi
builtin cd -P -- "$__rb_dir"
` + bashUnset + bashRestoreFile + `if [ -n "$__rb_state" ]; then builtin eval "$__rb_state"; fi
builtin unset __rb_in __rb_unset __rb_gate __rb_state __rb_lost
builtin cd -- "$__rb_dir" || __rb_lost=1
} 2>/dev/null
if [ -n "${__rb_lost-}" ]; then builtin trap - EXIT; builtin printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; fi
`

// warmTouch runs, while the shell waits, the builtins that restoring and
// saving the session use, writing nowhere: the first run of each in a
// new process pays for faulting its code in, which would otherwise be
// paid on the command's time. The function's variables are local and go
// with it.
const warmTouch = `__rb_touch() { builtin declare -x __rb_t=x; builtin cd -P -- .; { builtin printf '%s' "$PWD"; builtin export -p; builtin declare -f; builtin alias -p; builtin compgen -e; } >/dev/null 2>&1; }
__rb_touch; builtin unset -f __rb_touch`

// warmCommand is a warm shell's -c string. The command's text cannot be
// the -c string itself (the shell started before the text was known), so
// eval runs it, at the top level as -c would, after unsetting the variable
// that carried it. Line numbers and $0 are a plain bash's; only a syntax
// error's message names eval where a cold shell names -c.
const warmCommand = `builtin eval "builtin unset __rb_cmd; $__rb_cmd"`

// maxWarmScript is the longest command text sent to a warm shell: a pipe
// holds 64 KiB, and a longer text would have the parent wait on the
// shell's reading. Longer commands start cold.
const maxWarmScript = 16 << 10

// warmRetries is how many warm shells in a row may fail (not start, or be
// found dead when taken) before the environment stops pre-starting them:
// a host where they cannot work pays for them once, not on every command.
const warmRetries = 4

// warmShell is a bash started ahead of the command it will run: built
// with the session's child environment, placed in its own container (or
// started under the subreaper) and blocked reading its inputs from a pipe.
// An idle one holds one process (two under the subreaper), its container,
// and the parent's ends of two or three pipes; it has no file of its own
// and no user code runs in it.
type warmShell struct {
	cmd  *exec.Cmd
	proc termination.Proc
	cont termination.Container
	env  []string // the child environment, without BASH_ENV
	// unchanged are the state lines that would change nothing in this
	// shell (see warmState).
	unchanged map[string]bool
	limits    envs.Limits // the limits of its container
	script    *os.File    // write end of fd 3: the command's inputs
	out       *os.File    // read end of its stdout and stderr
	report    *os.File    // read end of the subreaper's report, when under it
	warnings  []string    // containment that fell short when it started
	denials   *denials    // connects its sandbox refused (nil unconfined)
	// intact says whether the sandbox of a shell started from a
	// confined thread still holds what a shell started now would get
	// (nil: started otherwise).
	intact func() bool
}

// warmFits reports whether c can run on a warm shell: a bash command run
// to completion with merged output, no input, no terminal and the
// environment's limits. Anything else starts cold, as it always did.
func (e *Env) warmFits(c envs.Command, out, errc *envs.Capture, limits envs.Limits) bool {
	return e.bash && !e.opts.NoPrestart && c.Shell != "" && out != nil && errc == nil &&
		c.PTY == nil && c.Stdin == nil && !c.SeparateStreams &&
		limits == e.opts.Limits && len(c.Shell) <= maxWarmScript && !strings.ContainsRune(c.Shell, 0)
}

// warmEnv reports whether env, a command's child environment built with
// its own variables overlay, is the one warm shells are built with: a
// command whose variables change it starts cold, without waiting for a
// warm shell it could not use.
func (e *Env) warmEnv(env []string, overlay map[string]string) bool {
	if len(overlay) == 0 {
		return true // the warm shells' own; takeWarm finds out if it changed
	}
	base, _, err := e.childEnv(nil)
	return err == nil && slices.Equal(base, env)
}

// warmPoolMax is how many shells may wait at once. One is enough for
// commands that come with pauses between them (an agent thinking); while
// they come back to back — a command found none ready and had to wait for
// one starting — up to three start side by side, so that their starts
// overlap the commands instead of following them (a start takes longer
// than a command that finds its shell ready, and with two the next
// command still often waits). The pool shrinks back to one when a command
// finds two ready.
const warmPoolMax = 3

// prewarm tops the pool of warm shells up, in the background. The
// goroutines belong to the environment: Close waits for them.
func (e *Env) prewarm() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.NoPrestart || !e.bash || e.closed || e.warmFailures >= warmRetries {
		return
	}
	for len(e.warm)+e.warmStarting < max(e.warmWant, 1) {
		e.warmStarting++
		e.bg.Add(1) // under mu, before Close can see closed and wait
		go e.warmOne()
	}
}

// warmOne starts one warm shell and puts it in the pool.
func (e *Env) warmOne() {
	defer e.bg.Done()
	w, err := e.startWarm()
	e.mu.Lock()
	e.warmStarting--
	if e.warmed != nil {
		close(e.warmed) // wake those waiting for it
		e.warmed = nil
	}
	if err != nil {
		e.warmFailures++
	} else if !e.closed {
		e.warm, w = append(e.warm, w), nil
	}
	e.mu.Unlock()
	if err != nil {
		e.log.Debug("local: pre-starting a shell", "err", err)
	}
	if w != nil {
		w.dispose(e)
	}
}

// takeWarm hands out a warm shell for a command whose child environment
// is env, waiting (up to ctx) for one that is being started, since that
// never takes longer than a cold start would. It returns nil when there is
// none to take. Taking one starts its replacement at once, so that the
// next command finds it ready.
func (e *Env) takeWarm(ctx context.Context, env []string, overlay bool) *warmShell {
	e.mu.Lock()
	switch {
	case len(e.warm) == 0 && e.warmStarting > 0:
		if e.warmTaken {
			// Not the first command, which may well come before the
			// shell started with the environment is ready.
			e.warmWant = warmPoolMax
		}
		if e.warmed == nil {
			e.warmed = make(chan struct{})
		}
		ch := e.warmed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		e.mu.Lock()
	case len(e.warm) >= 2:
		e.warmWant = 1
	}
	var w *warmShell
	var stale []*warmShell
	kept := e.warm[:0]
	for _, x := range e.warm {
		switch {
		case w == nil && slices.Equal(x.env, env):
			w = x
		case !overlay && !slices.Equal(x.env, env):
			// Without a command's own variables a different environment
			// means the base has changed (an environment file was
			// edited): the shell is out of date.
			stale = append(stale, x)
		default:
			kept = append(kept, x)
		}
	}
	clear(e.warm[len(kept):])
	e.warm = kept
	e.warmTaken = true
	e.mu.Unlock()
	for _, x := range stale {
		e.background(func() { x.dispose(e) })
	}
	e.prewarm()
	return w
}

// background runs f in a goroutine that Close waits for, or at once when
// the environment is already closed (Close may be past its wait).
func (e *Env) background(f func()) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		f()
		return
	}
	e.bg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.bg.Done()
		f()
	}()
}

// startWarm starts a warm shell through its launch plan (see plan.go):
// container, pipes, bash (under the subreaper where that is what holds
// the tree), placement, and the wait until it is ready.
func (e *Env) startWarm() (*warmShell, error) {
	env, _, err := e.childEnv(nil)
	if err != nil {
		return nil, err
	}
	w := &warmShell{env: env, unchanged: unchangedLines(env), limits: e.opts.Limits, denials: &denials{}}
	ws := &warmStart{e: e, w: w, gone: noWait}
	ws.pl = &plan{e: e, ctx: context.Background(), limits: w.limits, spare: true, reapLost: true, denials: w.denials, hooks: planHooks{
		hold: ws.hold, build: ws.build, confine: ws.confine,
		start: ws.start, own: ws.own, settle: ws.settle,
	}}
	if err := ws.pl.run(); err != nil {
		return nil, err
	}
	return w, nil
}

// warmStart is a warm shell being started: its launch plan's hooks and
// what they share.
type warmStart struct {
	e  *Env
	w  *warmShell
	pl *plan
	// The shell's ends of its inputs, output and ready pipes, and the
	// parent's end of the ready pipe.
	sr, ow, readyW, readyR *os.File
	threaded               bool // started from a confined thread (see confineWarm)
	placed                 bool // started inside its container (see startInto)
	// gone waits for the confined thread to end (see
	// confine.Prepared.Start); noWait when there is none.
	gone func() error
}

// hold makes the shell's pipes: its inputs, which it waits on (its start
// gate), its output, and the one it says it is ready on, noted for Close
// to stop the wait.
func (ws *warmStart) hold() error {
	pl, w := ws.pl, ws.w
	sr, sw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: warm shell pipe: %w", err)
	}
	w.script, ws.sr = sw, pl.childEnd(sr)
	pl.closeOnFail(sw)
	or, ow, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: warm shell pipe: %w", err)
	}
	w.out, ws.ow = or, pl.childEnd(ow)
	pl.closeOnFail(or)
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: warm shell pipe: %w", err)
	}
	ws.readyR, ws.readyW = readyR, pl.childEnd(readyW)
	pl.always(func() { readyR.Close() })
	if !ws.e.startingWarm(readyR) {
		return fmt.Errorf("local: warm shell: %w", errClosed)
	}
	pl.always(func() { ws.e.startedWarm(readyR) })
	pl.held = true
	return nil
}

// build makes the shell: bash reading its start-up file, then waiting on
// its inputs.
func (ws *warmStart) build() error {
	e := ws.e
	xc := exec.Command(e.shell, "-c", warmCommand)
	xc.Args[0] = "bash"
	bashEnv := e.warmPrologue
	xc.ExtraFiles = []*os.File{ws.sr, ws.readyW}
	if e.warmSource != nil {
		bashEnv = fmt.Sprintf("/dev/fd/%d", 3+len(xc.ExtraFiles))
		xc.ExtraFiles = append(xc.ExtraFiles, e.warmSource)
	}
	env := ws.w.env
	xc.Env = append(env[:len(env):len(env)], "BASH_ENV="+bashEnv)
	// "/" cannot be deleted under the shell while it starts (bash would
	// complain on stderr, which is the command's output); the command
	// moves it to its own directory before running anything.
	xc.Dir = "/"
	xc.Stdout, xc.Stderr = ws.ow, ws.ow
	xc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	xc.WaitDelay = e.opts.DrainDelay
	ws.pl.xc = xc
	return nil
}

// confine chooses how the shell starts confined (see confineWarm).
func (ws *warmStart) confine() (*confine.Handover, error) {
	threaded, h, err := ws.e.confineWarm(ws.pl.xc, ws.pl.underSubreaper())
	if err != nil {
		return nil, fmt.Errorf("local: warm shell: %w", err)
	}
	ws.threaded = threaded
	return h, nil
}

// start starts the shell. Its handover is served as soon as it started
// (the trampoline waits for it before the shell can get ready).
func (ws *warmStart) start() error {
	pl := ws.pl
	start := func() (err error) {
		if ws.threaded {
			// The sandbox refuses clone3 (see confine's seccomp
			// filter), so the confined thread cannot start the shell
			// inside its cgroup: it is moved in by settle.
			return pl.xc.Start()
		}
		pl.xc, ws.placed, err = ws.e.startInto(pl.xc, pl.cont)
		return err
	}
	var err error
	if ws.threaded {
		// The thread that started a shell confined, in its sandbox
		// until it ends, ends while the shell starts: it is waited for
		// once the shell is ready, before the shell is handed to anyone.
		ws.gone, ws.w.intact, err = ws.e.sandbox.threads.start(ws.e.log, start, ws.w.denials.add)
		pl.always(func() { ws.gone() })
	} else {
		err = start()
	}
	if err != nil {
		return fmt.Errorf("local: warm shell: %w", err)
	}
	return nil
}

// own hands the started shell to w, whose dispose ends it should settle
// fail.
func (ws *warmStart) own() func() {
	w, pl := ws.w, ws.pl
	w.cmd, w.proc, w.cont, w.report, w.warnings = pl.xc, pl.proc, pl.cont, pl.report, pl.warnings
	return func() { w.dispose(ws.e) }
}

// settle places the shell in its container when it did not start there,
// and waits until it is ready and its confined thread has ended.
func (ws *warmStart) settle() error {
	w := ws.w
	if w.cont != nil && !ws.placed {
		if err := ws.e.placeWarm(context.Background(), w, w.cmd.Process.Pid); err != nil {
			if !w.limits.IsZero() {
				return fmt.Errorf("local: %w", err)
			}
			w.warnings = append(w.warnings, "containment failed: "+err.Error())
		}
	}
	// Ready means waiting on its pipe, its own start done: a command that
	// takes a shell still starting would wait for that start.
	ws.readyR.SetReadDeadline(time.Now().Add(warmReadyTimeout))
	if _, err := ws.readyR.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("local: warm shell did not get ready: %w", err)
	}
	if err := ws.gone(); err != nil {
		return fmt.Errorf("local: warm shell: %w", err)
	}
	return nil
}

// startingWarm notes the ready pipe of a shell being started, so that
// Close can stop the wait for it; false when the environment is closed.
func (e *Env) startingWarm(ready *os.File) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	if e.warmReady == nil {
		e.warmReady = map[*os.File]bool{}
	}
	e.warmReady[ready] = true
	return true
}

func (e *Env) startedWarm(ready *os.File) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.warmReady, ready)
}

// warmExitWait is how long an idle shell whose pipe closed has to exit
// by itself before it is killed.
const warmExitWait = 2 * time.Second

// warmReadyTimeout bounds the wait for a warm shell's start, which on a
// loaded host can take long, but never this long.
const warmReadyTimeout = 30 * time.Second

// exited reports whether the warm shell's process has exited (it was
// killed while it waited), without reaping it.
func (w *warmShell) exited() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, w.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}

// deliver sends the command's inputs and text, which lets the shell run.
// An error means the shell is gone (nothing reads the pipe any more).
func (w *warmShell) deliver(f sessionFiles, dir, text string) error {
	var b strings.Builder
	b.Grow(len(text) + 512)
	in, state := f.in, ""
	if in != "" {
		if s, ok := warmState(in, w.unchanged); ok {
			in, state = "", s
		}
	}
	for _, kv := range [][2]string{
		{"__rb_in", in}, {"__rb_state", state}, {"__rb_out", f.saveTo()}, {"__rb_cwdf", f.cwdTo()}, {"__rb_dir", dir},
		{"__rb_unset", f.unsetList(w.env)}, {"__rb_cmd", text},
	} {
		b.WriteString(kv[0] + "=" + shellQuote(kv[1]) + "\n")
	}
	// The shell is blocked reading, so the write does not wait long
	// even when it is over what the pipe holds; the deadline guards
	// against a shell stopped (SIGSTOP) while it waited.
	w.script.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := w.script.WriteString(b.String())
	if cerr := w.script.Close(); err == nil {
		err = cerr
	}
	w.script = nil
	if err != nil {
		return fmt.Errorf("local: warm shell: %w", err)
	}
	return nil
}

// dispose ends a warm shell that will run no command: the pipe that would
// have carried its command closes (it would exit by itself), its tree is
// killed, reaped and its container removed.
func (w *warmShell) dispose(e *Env) {
	underSubreaper := w.report != nil
	closeAll(w.script, w.out, w.report)
	w.script, w.out, w.report = nil, nil, nil
	if w.cmd != nil && w.cmd.Process != nil {
		// An idle shell has run nothing of anyone's: its process group
		// is all there is of it, and its PID, not reaped yet, cannot have
		// been reused. A direct child is killed at once. Under the
		// subreaper (which would die first and leave the shell to init)
		// the shell exits by itself instead, its pipe closed unwritten
		// (ExitGateClosed), as soon as it gets there, and the subreaper
		// reaps it and exits too; one that does not (stopped, say) is
		// killed.
		if !underSubreaper {
			syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		}
		exited := make(chan struct{})
		go func() {
			w.cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(warmExitWait):
			err := termination.KillTree(context.Background(), w.proc, termination.Options{Container: w.cont, Reaper: e.reaper, Logger: e.log})
			if err != nil {
				e.log.Debug("local: ending a warm shell", "err", err)
			}
			<-exited
		}
	}
	if w.cont != nil {
		if err := w.cont.Remove(context.Background()); err != nil {
			e.reaper.Add(w.cont)
		}
	}
}

// runWarm starts c on the warm shell w. It returns false when w turns out
// to be dead (someone killed it while it waited): w is then disposed of
// and p is as it was, for the caller to start c cold.
func (e *Env) runWarm(ctx context.Context, p *process, c envs.Command, w *warmShell, out *envs.Capture, dir string) (bool, error) {
	if w.exited() {
		e.warmDied(w)
		return false, nil
	}
	if w.intact != nil && !w.intact() {
		// Its sandbox was made before something it protects changed
		// (a repository appeared at the workspace's root, say): the
		// command starts cold, in a sandbox made now.
		e.background(func() { w.dispose(e) })
		return false, nil
	}
	p.cmd, p.proc, p.cont, p.report, p.onWarm = w.cmd, w.proc, w.cont, w.report, true
	p.denials = w.denials
	p.warnings = append(p.warnings, w.warnings...)
	p.readEnds = []*os.File{w.out}
	p.output = p.sink(w.out, out)
	p.watchContext(ctx, c.Timeout, true)
	undo := func() {
		for _, c := range p.closers {
			c.Close()
		}
		p.cancel(nil)
		p.cmd, p.proc, p.cont, p.report, p.onWarm = nil, termination.Proc{}, nil, nil, false
		p.readEnds, p.pending, p.output, p.closers = nil, nil, nil, nil
		p.warnings = p.warnings[:len(p.warnings)-len(w.warnings)]
	}
	if !e.trackOpen(p) {
		undo()
		e.background(func() { w.dispose(e) })
		return false, fmt.Errorf("local: %w", errClosed)
	}
	p.started = time.Now()
	if err := w.deliver(p.files, dir, c.Shell); err != nil {
		e.untrack(p)
		undo()
		e.warmDied(w)
		return false, nil
	}
	e.warmWorked()
	for _, f := range p.pending {
		f()
	}
	p.pending = nil
	p.watch()
	go p.wait()
	return true, nil
}

// warmDied disposes of a warm shell found dead, in the background, and
// counts it against pre-starting.
func (e *Env) warmDied(w *warmShell) {
	e.mu.Lock()
	e.warmFailures++
	e.mu.Unlock()
	e.background(func() { w.dispose(e) })
}

// warmWorked resets the count of warm shells that failed in a row.
func (e *Env) warmWorked() {
	e.mu.Lock()
	e.warmFailures = 0
	e.mu.Unlock()
}

// closeWarm disposes of the idle warm shells and waits for every shell
// being started or disposed of; Close calls it after marking the
// environment closed, so no new one starts.
func (e *Env) closeWarm() {
	e.mu.Lock()
	idle := e.warm
	e.warm = nil
	for ready := range e.warmReady {
		ready.SetReadDeadline(time.Now()) // the shells being started give up at once
	}
	e.mu.Unlock()
	for _, w := range idle {
		w.dispose(e)
	}
	e.bg.Wait()
	e.mu.Lock()
	spares := e.spares
	e.spares = nil
	e.mu.Unlock()
	for _, c := range spares {
		if err := c.Remove(context.Background()); err != nil {
			e.reaper.Add(c)
		}
	}
}
