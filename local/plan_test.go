package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

var errInjected = errors.New("injected failure")

// planModes are the ways a child is started and held: in a container, in
// a process group only, under the subreaper, with limits (containment
// required), and confined (through the trampoline and its handover, or,
// for a shell, from a confined thread), with and without the subreaper.
func planModes(t *testing.T) map[string]Options {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reaper := []string{exe, subreaper.Command}
	return map[string]Options{
		"Contained":         {Confine: confine.Off()},
		"ProcessGroups":     {Confine: confine.Off(), NoContainment: true},
		"Subreaper":         {Confine: confine.Off(), NoContainment: true, Subreaper: reaper},
		"Limits":            {Confine: confine.Off(), Limits: envs.Limits{Pids: 64}},
		"Confined":          {},
		"ConfinedSubreaper": {NoContainment: true, Subreaper: reaper},
	}
}

// openPlanEnv opens an environment in dir that pre-starts nothing, so
// that every start is one the test asks for.
func openPlanEnv(t *testing.T, opts Options, dir string) *Env {
	t.Helper()
	opts.NoPrestart, opts.Grace, opts.Dir = true, 300*time.Millisecond, dir
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// injection is what a failure injected at one step saw: whether the step
// came, and the child and the container it would leave behind.
type injection struct {
	hit  bool
	pid  int
	dirs []string
}

// inject makes the plans of e fail at step.
func inject(e *Env, step string) *injection {
	in := &injection{}
	e.failStep = func(s string, p *plan) error {
		if s != step {
			return nil
		}
		in.hit = true
		if p.cont != nil {
			in.dirs = containerDirs(p.cont.Ref())
		}
		if p.xc != nil && p.xc.Process != nil {
			in.pid = p.xc.Process.Pid
		}
		return errInjected
	}
	return in
}

func containerDirs(ref termination.ContainerRef) []string {
	var dirs []string
	if ref.V2Dir != "" {
		dirs = append(dirs, ref.V2Dir)
	}
	for _, d := range ref.V1Dirs {
		dirs = append(dirs, d)
	}
	return dirs
}

// TestPlan_ColdRollbackLeavesNothing protects the rollback of a command
// started cold: whichever step of its launch plan fails, the caller gets
// that error, the command runs nothing, and no process, container, open
// descriptor or tracked process is left behind. A removed undo (or one
// run out of turn) leaves one of them.
func TestPlan_ColdRollbackLeavesNothing(t *testing.T) {
	for name, opts := range planModes(t) {
		t.Run(name, func(t *testing.T) {
			for _, s := range planSteps {
				t.Run(s.name, func(t *testing.T) { coldRollback(t, opts, s.name) })
			}
		})
	}
}

func coldRollback(t *testing.T, opts Options, step string) {
	dir := t.TempDir()
	e := openPlanEnv(t, opts, dir)
	marker := filepath.Join(dir, "ran")
	run := func() error {
		_, err := e.Run(t.Context(), envs.Command{Shell: "echo ran > " + marker})
		return err
	}
	if err := run(); err != nil {
		t.Fatalf("Run without a failure: %v", err) // also opens what the first start opens for good
	}
	os.Remove(marker)
	before := quiet(t)
	noFinalizers(t)
	in := inject(e, step)
	err := run()
	if !in.hit {
		// Only settle can be left out: a command without a barrier is
		// not held, so there is nothing to let go.
		if step != "settle" || err != nil {
			t.Fatalf("step %s never came; Run: %v", step, err)
		}
		return
	}
	if !errors.Is(err, errInjected) {
		t.Fatalf("Run failing at %s: %v; want the injected error", step, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran although its start failed at %s", step)
	}
	nothingLeft(t, e, in, before)
}

// TestPlan_WarmRollbackLeavesNothing is TestPlan_ColdRollbackLeavesNothing
// for a shell started ahead of its command.
func TestPlan_WarmRollbackLeavesNothing(t *testing.T) {
	for name, opts := range planModes(t) {
		t.Run(name, func(t *testing.T) {
			for _, s := range planSteps {
				t.Run(s.name, func(t *testing.T) { warmRollback(t, opts, s.name) })
			}
		})
	}
}

func warmRollback(t *testing.T, opts Options, step string) {
	e := openPlanEnv(t, opts, t.TempDir())
	w, err := e.startWarm()
	if err != nil {
		t.Fatalf("startWarm without a failure: %v", err)
	}
	w.dispose(e)
	before := quiet(t)
	noFinalizers(t)
	in := inject(e, step)
	w, err = e.startWarm()
	if !in.hit || !errors.Is(err, errInjected) || w != nil {
		t.Fatalf("startWarm failing at %s: shell %v, %v (step came: %v); want no shell and the injected error", step, w != nil, err, in.hit)
	}
	nothingLeft(t, e, in, before)
}

// noFinalizers turns the garbage collector off until the test ends: a
// dropped *os.File is closed by its finalizer, which would hide the
// descriptor a removed undo leaks.
func noFinalizers(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// quiet waits until no child of this process is left and the open
// descriptors stay the same for a moment (what the last start released
// in the background is released), and returns them.
func quiet(t *testing.T) []string {
	t.Helper()
	runtime.GC() // what the last start dropped is closed now, not while the test looks
	var last []string
	testwait.Until(t, "the last start to settle", func() bool {
		fds := openFDs(t)
		same := slices.Equal(fds, last)
		last = fds
		return same && len(descendants(t)) == 0
	})
	return last
}

// nothingLeft checks, for a bounded time, that the failed start left no
// process, container, descriptor or bookkeeping behind.
func nothingLeft(t *testing.T, e *Env, in *injection, before []string) {
	t.Helper()
	t.Logf("failed: child %d, container %v", in.pid, in.dirs)
	var left error
	deadline := time.Now().Add(testwait.Bound)
	for left = leftBehind(t, e, in, before); left != nil && time.Now().Before(deadline); left = leftBehind(t, e, in, before) {
		time.Sleep(testwait.Interval)
	}
	if left != nil {
		t.Error(left)
	}
}

func leftBehind(t *testing.T, e *Env, in *injection, before []string) error {
	if kids := descendants(t); len(kids) > 0 {
		return fmt.Errorf("processes left: %v", kids)
	}
	if in.pid != 0 && syscall.Kill(in.pid, 0) != syscall.ESRCH {
		return fmt.Errorf("the child %d is still there", in.pid)
	}
	for _, d := range in.dirs {
		if _, err := os.Stat(d); err == nil {
			return fmt.Errorf("container %s left", d)
		}
	}
	if fds := openFDs(t); len(fds) > len(before) {
		return fmt.Errorf("descriptors left: %d open, %d before; new: %v", len(fds), len(before), slices.DeleteFunc(fds, func(fd string) bool { return slices.Contains(before, fd) }))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.running) > 0 || len(e.warmReady) > 0 {
		return fmt.Errorf("%d processes tracked, %d shells noted as starting", len(e.running), len(e.warmReady))
	}
	return nil
}

// openFDs lists this process's open descriptors and what they are.
func openFDs(t *testing.T) []string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, ent := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", ent.Name()))
		fds = append(fds, ent.Name()+"->"+target)
	}
	return fds
}

// descendants lists the processes (zombies included: a child not reaped
// is left behind too) whose parent is this process or one of its
// descendants.
func descendants(t *testing.T) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[int]int{}
	for _, ent := range ents {
		if pid, err := strconv.Atoi(ent.Name()); err == nil {
			parents[pid] = testproc.Parent(pid)
		}
	}
	self := os.Getpid()
	var out []string
	for pid := range parents {
		for p, hops := parents[pid], 0; p > 1 && hops < 16; p, hops = parents[p], hops+1 {
			if p == self {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				out = append(out, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
				break
			}
		}
	}
	return out
}
