package procregistry

import (
	"context"
	"sync"
	"testing"
)

// Kill and a natural exit race; whatever wins, the job has exactly one
// completion. Breaks if the kill path and the exit path both report.
func TestKill_RaceWithExitOneCompletion(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	var ids []string
	for i := range 12 {
		// Exits on its own within a few ms, while the kill is underway.
		sh := "sleep 0.0" + string(rune('1'+i%9))
		ids = append(ids, start(t, r, StartRequest{Shell: sh, Notify: true}).ID)
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		for range 2 {
			wg.Go(func() { r.Kill(context.Background(), id) })
		}
	}
	wg.Wait()
	for _, id := range ids {
		in := waitDone(t, r, id)
		if in.Status != StatusKilled && in.Status != StatusExited {
			t.Errorf("%s: status %s", id, in.Status)
		}
	}
	evs := drainEvents(t, r, "agent")
	count := map[string]int{}
	for _, ev := range ofType(evs, EventCompletion) {
		count[ev.Job]++
	}
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("job %s: %d completions; want 1", id, count[id])
		}
	}
}

// Kill tears down the whole tree, including a grandchild in its own
// session, and says killed, then already exited.
func TestKill_TreeAndAnswers(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "setsid sleep 60 & trap '' TERM; sleep 60; wait", Notify: true})
	res, err := r.Kill(t.Context(), in.ID)
	if err != nil || res.Outcome != KillKilled || res.Info.Status != StatusKilled || res.Info.KilledBy != "kill" {
		t.Fatalf("Kill = %+v, %v", res, err)
	}
	res, err = r.Kill(t.Context(), in.ID)
	if err != nil || res.Outcome != KillAlreadyExited {
		t.Errorf("second Kill = %+v, %v; want already exited", res.Outcome, err)
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Reason != ReasonKilled || ev.KilledBy != "kill" {
		t.Errorf("completion = %+v", ev)
	}

}

// A session-lifetime job ends with its owner's session; a detached one
// does not.
func TestKill_EndSession(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	sess := start(t, r, StartRequest{Shell: "sleep 60"})
	det := start(t, r, StartRequest{Shell: "sleep 60", Lifetime: LifetimeDetached})
	res, err := r.EndSession(t.Context(), "agent")
	if err != nil || len(res) != 1 || res[0].ID != sess.ID {
		t.Fatalf("EndSession = %+v, %v", res, err)
	}
	if in, _ := r.Get(sess.ID); in.Status != StatusKilled || in.KilledBy != "session-end" {
		t.Errorf("session job: %+v", in)
	}
	if in, _ := r.Get(det.ID); in.Status != StatusRunning {
		t.Errorf("detached job: %s; want running", in.Status)
	}
}
