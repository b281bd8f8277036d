package procregistry

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

// escapeeShell is a job whose child double-forks out of the job's session:
// `sleep tag` is reparented away at once and is no descendant of the
// command, nor in its process group. Only the job's container can find
// it. tag is a unique duration, so the test can find it in /proc.
func escapeeShell(rest string) (shell, tag string) {
	tag = fmt.Sprintf("781.%06d", rand.IntN(1e6))
	return fmt.Sprintf("( setsid sleep %s & ) ; %s", tag, rest), tag
}

// findSleep finds the live `sleep tag` processes in /proc.
func findSleep(tag string) []termination.Proc {
	want := []byte("sleep\x00" + tag + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []termination.Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Equal(b, want) {
			continue
		}
		if p, err := termination.Identify(pid); err == nil && p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// waitEscapee waits (bounded) for the one `sleep tag` of a job, and
// cleans it up if the test fails before killing it.
func waitEscapee(t *testing.T, tag string) termination.Proc {
	t.Helper()
	var ps []termination.Proc
	testwait.Within(t, 10*time.Second, "the escaped sleep "+tag, func() bool { ps = findSleep(tag); return len(ps) == 1 })
	t.Cleanup(func() { ps[0].Signal(9) })
	return ps[0]
}

// requireContainer skips (fails under RUNBOX_INTEGRATION=require) when
// the job got no container on this machine.
func requireContainer(t *testing.T, in Info) {
	t.Helper()
	if in.Containment != "" {
		return
	}
	integration.Skip(t, "no container for jobs here: %s", in.Warning)
}

// A grandchild that double-forked and called setsid is killed with its
// job: the supervisor put the command in a container before it could
// fork, and Kill reopens that container. Breaks if the job runs
// uncontained or Kill forgets the container.
func TestContainer_KillCatchesDoubleFork(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	sh, tag := escapeeShell("sleep 783")
	in := start(t, r, StartRequest{Shell: sh})
	requireContainer(t, in)
	esc := waitEscapee(t, tag)
	res, err := r.Kill(t.Context(), in.ID)
	if err != nil || res.Outcome != KillKilled || res.Info.Status != StatusKilled {
		t.Fatalf("Kill = %+v, %v", res, err)
	}
	if esc.Alive() {
		t.Fatalf("the escaped %v survived the kill", esc)
	}
	if ps := findSleep(tag); len(ps) != 0 {
		t.Fatalf("left after kill: %v", ps)
	}
	var pids pidRecord
	readJSON(filepath.Join(r.opts.Dir, "jobs", in.ID, filePID), &pids)
	assertContainerGone(t, pids.Container)
}

// assertContainerGone checks that the cgroup directories of ref are gone.
func assertContainerGone(t *testing.T, ref *termination.ContainerRef) {
	t.Helper()
	if ref == nil {
		t.Fatal("pid.json has no container")
	}
	dirs := []string{ref.V2Dir}
	for _, d := range ref.V1Dirs {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s still exists (%v)", d, err)
		}
	}
}

// escapeeThen is escapeeShell whose command waits until the escaped
// sleep runs before it goes on with rest.
func escapeeThen(rest string) (shell, tag string) {
	tag = fmt.Sprintf("781.%06d", rand.IntN(1e6))
	return fmt.Sprintf("( setsid sleep %s & ) ; until pgrep -f '^sleep %s$' >/dev/null; do sleep 0.02; done; %s", tag, tag, rest), tag
}

// A job ends whole: a job that exits by itself leaving a daemon behind
// finishes as exited with the daemon already killed (counted in its exit
// status) and its container removed; a kill then finds nothing. Breaks if
// a finished job's leftovers outlive it.
func TestContainer_ExitedJobLeavesNothing(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	sh, tag := escapeeThen("exit 3")
	in := start(t, r, StartRequest{Shell: sh, Notify: true})
	requireContainer(t, in)
	got := waitDone(t, r, in.ID)
	if got.Status != StatusExited || got.Exit.Code != 3 || got.Exit.LeftoverKilled != 1 {
		t.Fatalf("job ended %+v; want exited 3, 1 leftover killed", got)
	}
	if ps := findSleep(tag); len(ps) != 0 {
		t.Fatalf("the daemon %v outlived its job", ps)
	}
	var pids pidRecord
	readJSON(filepath.Join(r.opts.Dir, "jobs", in.ID, filePID), &pids)
	assertContainerGone(t, pids.Container)
	res, err := r.Kill(t.Context(), in.ID)
	if err != nil || res.Outcome != KillAlreadyExited || res.Leftovers != 0 {
		t.Errorf("Kill after the end = %+v, %v; want already exited", res, err)
	}
	if ev := waitEvent(t, r, "agent", EventCompletion); ev.Reason != ReasonExited {
		t.Errorf("completion = %+v; want exited", ev)
	}
}

// A job that exits leaving nothing behind removes its own container.
func TestContainer_RemovedOnCleanExit(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Args: []string{"true"}})
	requireContainer(t, in)
	waitDone(t, r, in.ID)
	var pids pidRecord
	readJSON(filepath.Join(r.opts.Dir, "jobs", in.ID, filePID), &pids)
	assertContainerGone(t, pids.Container)
}

// Retention drops a finished job whose leftovers went with it, its
// container already gone.
func TestContainer_RetentionAfterLeftovers(t *testing.T) {
	clk := newFakeClock()
	r := newTestRegistry(t, "", func(o *Options) {
		o.Clock = clk
		o.Retention = time.Hour
		o.Watch.Window = time.Minute
	})
	sh, tag := escapeeThen("true")
	in := start(t, r, StartRequest{Shell: sh})
	requireContainer(t, in)
	waitDone(t, r, in.ID)
	if ps := findSleep(tag); len(ps) != 0 {
		t.Errorf("the daemon %v outlived its job", ps)
	}
	var pids pidRecord
	readJSON(filepath.Join(r.opts.Dir, "jobs", in.ID, filePID), &pids)
	testwait.Within(t, 10*time.Second, "sweeper timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(2 * time.Hour)
	testwait.Within(t, 10*time.Second, "retention", func() bool { return len(r.List("")) == 0 })
	assertContainerGone(t, pids.Container)
}
