//go:build linux

package termination

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shortGrace keeps the tests fast while still giving a SIGTERM round a real chance.
const shortGrace = 300 * time.Millisecond

func TestKillTree_Scenarios(t *testing.T) {
	tests := []struct {
		helper string
		why    string
	}{
		{"sleep", "a plain child must die on SIGTERM"},
		{"trap", "a SIGTERM trapper must be SIGKILLed"},
		{"setsid", "a setsid child leaves the group but is in the snapshot"},
		{"nohup", "a child that ignores SIGTERM in the group must be SIGKILLed"},
	}
	for _, tt := range tests {
		t.Run(tt.helper, func(t *testing.T) {
			s := startHelper(t, tt.helper, nil)
			err := KillTree(t.Context(), s.root, Options{Grace: shortGrace})
			if err != nil {
				t.Fatalf("KillTree = %v (%s)", err, tt.why)
			}
			s.wait(t)
			assertGone(t, s.all()...)
		})
	}
}

// Without a container, a process that double-forked out of a new session
// and was reparented to init before the snapshot is not found: /proc no
// longer ties it to the tree. This documents the limit that containers lift
// (see TestKillTree_ContainerCatchesDoubleFork).
func TestKillTree_DoubleForkEscapesWithoutContainer(t *testing.T) {
	s := startHelper(t, "daemon", nil)
	if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace}); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if !s.others[0].Alive() {
		t.Skip("the orphan died anyway; nothing to document")
	}
}

// A parent that handles SIGTERM by reaping its own children must get to
// do so: it exits by itself (status 7), not by SIGKILL.
func TestKillTree_ParentReapsOnSIGTERM(t *testing.T) {
	s := startHelper(t, "reaper", nil)
	if err := KillTree(t.Context(), s.root, Options{Grace: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	err := s.wait(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("parent's exit = %v; want exit status 7 (it was killed instead of exiting by itself)", err)
	}
	assertGone(t, s.all()...)
}

// Grace 0 goes straight to SIGKILL: the reaper parent has no chance.
func TestKillTree_ZeroGraceKills(t *testing.T) {
	s := startHelper(t, "reaper", nil)
	if err := KillTree(t.Context(), s.root, Options{}); err != nil {
		t.Fatal(err)
	}
	err := s.wait(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("parent's exit = %v; want killed by SIGKILL", err)
	}
	assertGone(t, s.all()...)
}

// A cancelled ctx must skip the grace periods but still kill everything.
func TestKillTree_ContextCancelledStillKills(t *testing.T) {
	s := startHelper(t, "setsid", nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if err := KillTree(ctx, s.root, Options{Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("KillTree took %v with a cancelled ctx", d)
	}
	s.wait(t)
	assertGone(t, s.all()...)
}

// A root with a stale identity (its PID now names another process) must
// not be signalled, nor its process group.
func TestKillTree_RecycledRootUntouched(t *testing.T) {
	s := startHelper(t, "nohup", nil)
	stale := Proc{PID: s.root.PID, StartTime: s.root.StartTime - 1}
	if err := KillTree(t.Context(), stale, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.all() {
		if !p.Alive() {
			t.Fatalf("%v was signalled through a recycled root", p)
		}
	}
}

// Many trees torn down at once must not interfere.
func TestKillTree_ManyAtOnce(t *testing.T) {
	const n = 8
	var ss []*started
	for i := range n {
		ss = append(ss, startHelper(t, []string{"trap", "setsid", "reaper", "nohup"}[i%4], nil))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range ss {
		wg.Go(func() { errs[i] = KillTree(t.Context(), s.root, Options{Grace: shortGrace}) })
	}
	wg.Wait()
	for i, s := range ss {
		if errs[i] != nil {
			t.Errorf("tree %d: %v", i, errs[i])
		}
		s.wait(t)
		assertGone(t, s.all()...)
	}
}
