package local

// One launch plan starts every child of this package: a command started
// cold (Env.start) and a shell started ahead of its command
// (Env.startWarm). The kinds differ only in the hooks they give some
// steps (planHooks); the order and the rollback are written once, here.
//
// The steps, in order, and what undoes each when a later one fails:
//
//  1. contain: the child's container. A shell takes a kept one first
//     (see recycle); else one is made unless NoContainment and no
//     limits. One that cannot be made fails the start only when limits
//     ask for it, else it is a warning.
//     Undo: remove the container (a shell's goes to the reaper when it
//     will not go, as dispose does).
//  2. hold: what holds the child at its start. Cold: the start barrier,
//     when there is a container to place it in. A shell: its inputs
//     pipe (its gate), its output pipe and the pipe it says it is ready
//     on (noted for Close, which stops the wait for it).
//     Undo: close the barrier, or the shell's pipes. The ready pipe is
//     closed and forgotten whatever the outcome.
//  3. build: the exec.Cmd. Cold: the command itself, or an early result
//     (cannot be found or entered: 127/126); a shell: bash, waiting on
//     its inputs. Nothing to undo: nothing runs and nothing is open.
//  4. confine: the trampoline's argv and its handover (a shell may be
//     left to a confined thread instead, see confineWarm); refused when
//     the sandbox cannot be given.
//     Undo: close the handover.
//  5. reap: the subreaper, when no container holds the tree: its argv
//     and its report pipe.
//     Undo: close the report pipe.
//  6. wire (cold only): stdin, the output pipes (or a terminal) and the
//     command's own context, with its timeout and, for Run, the
//     caller's interrupt.
//     Undo: close the pipes, stop the timers, cancel the context.
//  7. start: the child starts. Whatever the outcome, the parent's copies
//     of the child's ends close here (barrier, pipes). Started, its
//     handover is served and its process identified, and its owner takes
//     it: the process (tracked, its context watched, its report read) or
//     the warm shell. From then on the owner's abort stands for every
//     undo above.
//  8. settle (a held child only): cold, place it in its container and
//     open the barrier (launch.Barrier.Admit); a shell, place it when it
//     did not start there, wait until it is ready, and until the thread
//     that confined it has ended.
//     Abort: cold, the barrier closed unopened makes the child exit
//     having run nothing, and its waiter reaps it and releases the rest
//     (container, state, pipes); a shell is disposed of (its pipes
//     closed, its tree killed and reaped, its container removed).

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/termination"
)

// plan is one start of a child (see the top of this file). The fields
// from cont on are what the steps make, for the owner to take.
type plan struct {
	e      *Env
	ctx    context.Context // bounds making and removing the container
	limits envs.Limits
	hooks  planHooks
	// spare: take a kept container first. reapLost: a container the
	// rollback cannot remove goes to the reaper.
	spare, reapLost bool
	denials         *denials // told of the connects the sandbox refuses the child

	cont      termination.Container
	xc        *exec.Cmd
	handover  *confine.Handover // until it is served
	report    *os.File          // read end of the subreaper's report
	proc      termination.Proc
	warnings  []string   // containment that fell short
	held      bool       // hold holds the child at its start: settle lets it go
	childEnds []*os.File // the child's ends, closed in the parent at start
	undos     []undo
}

// planHooks are what a kind of start does at the steps where the kinds
// differ. A nil hold, wire or settle does nothing; the others are needed.
type planHooks struct {
	hold    func() error
	build   func() error // sets plan.xc
	confine func() (*confine.Handover, error)
	wire    func() error
	start   func() error
	// own hands the started child to its owner, and returns the owner's
	// abort, which ends the child and releases what it holds should
	// settle fail.
	own    func() (abort func())
	settle func() error
}

// undo is one entry of a plan's rollback.
type undo struct {
	f      func()
	always bool // a deferred release: run when the plan ends, whatever the outcome
}

// planStep is one step of the launch sequence. when, if set, says whether
// it applies to this start.
type planStep struct {
	name string
	run  func(*plan) error
	when func(*plan) bool
}

// planSteps is the launch sequence.
var planSteps = [...]planStep{
	{name: "contain", run: (*plan).contain},
	{name: "hold", run: func(p *plan) error { return callHook(p.hooks.hold) }},
	{name: "build", run: func(p *plan) error { return p.hooks.build() }},
	{name: "confine", run: (*plan).confine},
	{name: "reap", run: (*plan).reap},
	{name: "wire", run: func(p *plan) error { return callHook(p.hooks.wire) }},
	{name: "start", run: (*plan).start},
	{name: "settle", run: func(p *plan) error { return callHook(p.hooks.settle) }, when: func(p *plan) bool { return p.held }},
}

func callHook(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

// run runs the steps in order. On the first error it unwinds what the
// steps did, in reverse, and returns that error unchanged.
func (p *plan) run() error {
	for _, s := range planSteps {
		if s.when != nil && !s.when(p) {
			continue
		}
		err := p.injected(s.name)
		if err == nil {
			err = s.run(p)
		}
		if err != nil {
			p.unwind(true)
			return err
		}
	}
	p.unwind(false)
	return nil
}

// injected is the failure a test asks for at step (nil: none).
func (p *plan) injected(step string) error {
	if p.e.failStep == nil {
		return nil
	}
	return p.e.failStep(step, p)
}

// unwind closes the child's ends still open and runs the undos in
// reverse: every one when the plan failed, else the deferred releases.
func (p *plan) unwind(failed bool) {
	p.closeChildEnds()
	for i := len(p.undos) - 1; i >= 0; i-- {
		if failed || p.undos[i].always {
			p.undos[i].f()
		}
	}
	p.undos = nil
}

// onFail registers f to undo a step should a later one fail.
func (p *plan) onFail(f func()) { p.undos = append(p.undos, undo{f: f}) }

// always registers f to run when the plan ends, whatever the outcome.
func (p *plan) always(f func()) { p.undos = append(p.undos, undo{f: f, always: true}) }

// closeOnFail closes f should a later step fail.
func (p *plan) closeOnFail(f *os.File) { p.onFail(func() { f.Close() }) }

// childEnd notes f, the child's end of a pipe, to be closed in the parent
// once the child started (or failed to). It returns f.
func (p *plan) childEnd(f *os.File) *os.File {
	p.childEnds = append(p.childEnds, f)
	return f
}

func (p *plan) closeChildEnds() {
	closeAll(p.childEnds...)
	p.childEnds = nil
}

// contain gives the child its container (step 1).
func (p *plan) contain() error {
	if p.spare {
		if c := p.e.spareContainer(); c != nil {
			p.setContainer(c)
			return nil
		}
	}
	if p.e.opts.NoContainment && p.limits.IsZero() {
		return nil
	}
	cont, err := launch.NewContainer(p.ctx, p.e.containerID(), p.limits, termination.WithDetection(p.e.detection()))
	if err != nil {
		if !p.limits.IsZero() {
			return fmt.Errorf("local: %w", err)
		}
		p.warnings = append(p.warnings, "containment unavailable: "+err.Error())
		return nil
	}
	p.setContainer(cont)
	return nil
}

func (p *plan) setContainer(c termination.Container) {
	p.cont = c
	p.onFail(func() {
		if err := c.Remove(p.ctx); err != nil && p.reapLost {
			p.e.reaper.Add(c)
		}
	})
}

// confine puts the child in its sandbox (step 4).
func (p *plan) confine() error {
	h, err := p.hooks.confine()
	if err != nil {
		return err
	}
	if h != nil {
		p.handover = h
		p.onFail(h.Close)
	}
	return nil
}

// underSubreaper reports whether the child runs under the subreaper:
// there is one, and no container holds the child's tree.
func (p *plan) underSubreaper() bool {
	return p.e.opts.Subreaper != nil && (p.cont == nil || p.cont.Mechanism() == termination.ProcessGroup)
}

// reap makes the child run its program under the subreaper, which
// reports on a pipe (step 5).
func (p *plan) reap() error {
	if !p.underSubreaper() {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("local: subreaper pipe: %w", err)
	}
	p.report = r
	p.closeOnFail(r)
	p.childEnd(w)
	o := p.e.opts
	p.xc.Args = subreaper.Argv(o.Subreaper, o.Grace, len(p.xc.ExtraFiles), p.xc.Path, p.xc.Args)
	p.xc.Path = o.Subreaper[0]
	p.xc.ExtraFiles = append([]*os.File{w}, p.xc.ExtraFiles...)
	return nil
}

// start starts the child and hands it to its owner (step 7).
func (p *plan) start() error {
	err := p.hooks.start()
	p.closeChildEnds()
	if err != nil {
		return err
	}
	pid := p.xc.Process.Pid
	if p.handover != nil {
		p.handover.Serve(pid, p.denials.add)
		p.handover = nil
	}
	p.proc, _ = termination.Identify(pid)
	if p.proc.PID == 0 {
		p.proc = termination.Proc{PID: pid}
	}
	p.commit(p.hooks.own())
	return nil
}

// commit puts abort in place of the undos registered so far: the owner
// now holds what they would release. The deferred releases stay and run
// first: a shell's confined thread is waited for, and its ready pipe
// released, before its owner ends it.
func (p *plan) commit(abort func()) {
	kept := []undo{{f: abort}}
	for _, u := range p.undos {
		if u.always {
			kept = append(kept, u)
		}
	}
	p.undos = kept
}
