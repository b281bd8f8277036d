package termination

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
)

// DefaultGrace is the grace period callers use when they have no better
// value: how long each SIGTERM round waits before the next step.
const DefaultGrace = 2 * time.Second

// killWait bounds how long [KillTree] waits, after SIGKILL, for the
// killed processes to disappear. It is not shortened by ctx: a teardown
// either verifies that nothing survived or says what did.
const killWait = 5 * time.Second

// maxStopRounds bounds the stop-the-world loop (SIGSTOP every process
// found, rescan, repeat) that pins a forking tree before SIGKILL.
const maxStopRounds = 64

// Options tunes [KillTree]. The zero value is valid: no grace, no
// container, no logging.
type Options struct {
	// Grace is how long to wait after each SIGTERM round (first the
	// parent alone, then the surviving descendants). Zero means no SIGTERM
	// at all: straight to SIGKILL. Callers fill in a default, usually
	// [DefaultGrace]; KillTree does not.
	Grace time.Duration
	// Container, when non-nil, holds the tree: its processes are part of
	// the snapshot, and after the SIGKILL round it is killed (to catch
	// processes that escaped the tree), verified empty and removed.
	// Nil means the tree is the process group plus the descendants found
	// in /proc.
	Container Container
	// Reaper, when non-nil, takes a Container that could not be removed
	// (or still held survivors) and retries later; a removal failure is
	// then logged rather than returned. Nil means the error is returned and
	// the container is left to the caller.
	Reaper *Reaper
	// Logger receives one record per teardown step. Nil discards them.
	Logger *slog.Logger
}

// KillTree tears down root's whole tree: root, its descendants, the
// members of its process group (pgid == root.PID: the caller started it
// with Setpgid) and, with opts.Container, everything in the container.
//
// The order is the package's core invariant (see the package doc):
//
//  1. snapshot the tree before any signal, so children that called setsid
//     are known while they are still descendants;
//  2. SIGTERM (then SIGCONT) the parent only, and wait up to Grace for it
//     to exit, returning early once it is gone (a parent that shuts its
//     children down on SIGTERM exits after them, so they had their chance);
//  3. SIGTERM the surviving processes, plus any found by a fresh snapshot,
//     and wait up to Grace again;
//  4. SIGSTOP everything found, rescanning until no new process appears,
//     then SIGKILL all of it;
//  5. Container.Kill, to catch what escaped the tree;
//  6. verify that nothing is left and Container.Remove.
//
// A recycled PID is never signalled. If ctx ends, KillTree jumps to step
// 4 at once; steps 4–6 still run, bounded by an internal deadline, so a
// cancelled teardown still reports what survived. Survivors are returned as
// a *[envs.SurvivorsError] (possibly joined with container errors). root is
// never waited for: the caller reaps it, and a zombie root counts as dead.
func KillTree(ctx context.Context, root Proc, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("root", root.PID)
	t := &tracker{root: root, c: opts.Container, procs: map[Proc]bool{}}
	if root.PID > 0 {
		t.procs[root] = true
	}
	var errs []error
	live, err := t.refresh()
	if err != nil {
		errs = append(errs, err)
	}
	log.Debug("termination: snapshot", "procs", len(live))

	if opts.Grace > 0 && ctx.Err() == nil && len(live) > 0 {
		if slices.Contains(live, root) {
			log.Debug("termination: SIGTERM parent")
			terminate(root)
			// The parent's grace ends when the parent does: children it
			// left behind are not waited on for the rest of it.
			live = t.wait(ctx, opts.Grace, func(live []Proc) bool { return !slices.Contains(live, root) })
		}
		if len(live) > 0 && ctx.Err() == nil {
			log.Debug("termination: SIGTERM survivors", "procs", len(live))
			for _, p := range live {
				if p != root {
					terminate(p)
				}
			}
			t.wait(ctx, opts.Grace, nil)
		}
	}

	if ctx.Err() != nil {
		log.Debug("termination: context ended, killing", "cause", context.Cause(ctx))
	}
	n := t.stopAndKill()
	log.Debug("termination: SIGKILL", "procs", n)

	if t.c != nil {
		if err := t.c.Kill(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, err)
		}
	}

	survivors, err := t.verify()
	if err != nil {
		errs = append(errs, err)
	}
	if len(survivors) > 0 {
		log.Warn("termination: survivors", "pids", survivors)
		errs = append(errs, &envs.SurvivorsError{PIDs: survivors})
		if t.c != nil && opts.Reaper != nil {
			opts.Reaper.Add(t.c) // it still holds them; retry the kill later
		}
	} else if t.c != nil {
		if err := t.c.Remove(context.WithoutCancel(ctx)); err != nil {
			if opts.Reaper != nil {
				log.Warn("termination: container kept for retry", "err", err)
				opts.Reaper.Add(t.c)
			} else {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// terminate sends SIGTERM and then SIGCONT, so a stopped process wakes up
// to handle the SIGTERM instead of holding it pending until SIGKILL.
func terminate(p Proc) {
	if p.Signal(syscall.SIGTERM) == nil {
		p.Signal(syscall.SIGCONT)
	}
}

// tracker accumulates every process known to belong to the tree. A process
// stays known by its identity after its parent dies and it is reparented
// away, which is why the first snapshot comes before any signal.
type tracker struct {
	root  Proc
	c     Container
	procs map[Proc]bool // known processes; the value is unused
}

// refresh rescans /proc, adds new descendants of known processes, new
// members of root's process group and the container's processes, forgets
// the dead, and returns the live known processes.
func (t *tracker) refresh() ([]Proc, error) {
	all, err := snapshot()
	if err != nil {
		return nil, err
	}
	byPID := make(map[int]stat, len(all))
	for _, s := range all {
		byPID[s.pid] = s
	}
	seeds := make(map[int]uint64, len(t.procs))
	for p := range t.procs {
		seeds[p.PID] = p.StartTime
	}
	for _, p := range descendantsOf(all, seeds) {
		t.procs[p] = true
	}
	for _, p := range groupMembers(all, t.root) {
		t.procs[p] = true
	}
	var cerr error
	if t.c != nil {
		pids, err := t.c.Procs()
		cerr = err
		for _, pid := range pids {
			if s, ok := byPID[pid]; ok {
				t.procs[Proc{PID: pid, StartTime: s.start}] = true
			}
		}
	}
	var live []Proc
	for p := range t.procs {
		if s, ok := byPID[p.PID]; ok && s.start == p.StartTime && !s.dead() {
			live = append(live, p)
		} else {
			delete(t.procs, p)
		}
	}
	slices.SortFunc(live, func(a, b Proc) int { return a.PID - b.PID })
	return live, cerr
}

// wait polls, with backoff, until no known process is alive (or done,
// when given, reports true), d has passed or ctx ends. It returns the
// processes still alive.
func (t *tracker) wait(ctx context.Context, d time.Duration, done func([]Proc) bool) []Proc {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	backoff := time.Millisecond
	for {
		live, _ := t.refresh()
		if len(live) == 0 {
			return nil
		}
		if done != nil && done(live) {
			return live
		}
		tick := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			tick.Stop()
			return live
		case <-deadline.C:
			tick.Stop()
			live, _ = t.refresh()
			return live
		case <-tick.C:
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

// stopAndKill SIGSTOPs every live known process, rescanning until a scan
// finds nothing new (a stopped process cannot fork, so a fork storm
// converges), then SIGKILLs them all. It returns how many it killed.
func (t *tracker) stopAndKill() int {
	stopped := map[Proc]bool{}
	for range maxStopRounds {
		live, _ := t.refresh()
		fresh := 0
		for _, p := range live {
			if !stopped[p] {
				stopped[p] = true
				fresh++
				p.Signal(syscall.SIGSTOP)
			}
		}
		if fresh == 0 {
			break
		}
	}
	for p := range stopped {
		p.Signal(syscall.SIGKILL)
	}
	return len(stopped)
}

// verify waits up to killWait for every known process to be gone and the
// container to be empty, SIGKILLing anything that turns up meanwhile. It
// returns the PIDs still alive at the end.
func (t *tracker) verify() ([]int, error) {
	deadline := time.Now().Add(killWait)
	backoff := time.Millisecond
	for {
		live, err := t.refresh()
		for _, p := range live {
			p.Signal(syscall.SIGKILL)
		}
		empty := true
		if t.c != nil && err == nil {
			empty, err = t.c.Empty()
		}
		if len(live) == 0 && empty && err == nil {
			return nil, nil
		}
		if time.Now().After(deadline) {
			pids := make([]int, 0, len(live))
			for _, p := range live {
				pids = append(pids, p.PID)
			}
			if !empty && t.c != nil {
				if cp, cerr := t.c.Procs(); cerr == nil {
					for _, pid := range cp {
						if !slices.Contains(pids, pid) {
							pids = append(pids, pid)
						}
					}
				}
			}
			if err != nil {
				err = fmt.Errorf("termination: verify teardown of %d: %w", t.root.PID, err)
			}
			return pids, err
		}
		time.Sleep(backoff) // bounded poll between scans, not a wait for an event
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}
