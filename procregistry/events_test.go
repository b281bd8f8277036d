package procregistry

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
)

// Heartbeats come at the interval only when there is new output, with
// that output's tail; the interval has a floor. Driven by a fake clock.
func TestHeartbeat_OnlyNewOutput(t *testing.T) {
	clk := newFakeClock()
	r := newTestRegistry(t, "", func(o *Options) { o.Clock = clk; o.MinHeartbeat = time.Minute; o.Watch.Window = time.Hour })
	in := start(t, r, StartRequest{Shell: `echo first; read x; echo "second $x"; read y`, Heartbeat: time.Second})
	if in.Heartbeat != time.Minute {
		t.Errorf("heartbeat = %v; want the floor, 1m", in.Heartbeat)
	}
	testwait.Within(t, 10*time.Second, "first line", func() bool { return strings.Contains(logText(t, r, in.ID), "first") })
	// Timers: the sweeper's and the heartbeat's.
	testwait.Within(t, 10*time.Second, "heartbeat timer", func() bool { return clk.Pending() == 2 })
	clk.Advance(time.Minute)
	ev := waitEvent(t, r, "agent", EventHeartbeat)
	if ev.Tail != "first\n" || ev.NewBytes != 6 {
		t.Errorf("first heartbeat = %+v", ev)
	}
	// A quiet interval: no heartbeat.
	testwait.Within(t, 10*time.Second, "heartbeat re-armed", func() bool { return clk.Pending() == 2 })
	clk.Advance(time.Minute)
	testwait.Within(t, 10*time.Second, "heartbeat re-armed", func() bool { return clk.Pending() == 2 })
	if err := r.Submit(t.Context(), in.ID, "x"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "second line", func() bool { return strings.Contains(logText(t, r, in.ID), "second") })
	clk.Advance(time.Minute)
	ev = waitEvent(t, r, "agent", EventHeartbeat)
	if ev.Tail != "second x\n" {
		t.Errorf("second heartbeat tail = %q; want only the new output", ev.Tail)
	}
	if evs := drainEvents(t, r, "agent"); len(evs) != 0 {
		t.Errorf("more events: %+v", evs)
	}
}

// Watch matches are rate limited per job; a pattern that keeps firing is
// switched off with one event; the global breaker trips once and
// releases once a window has passed.
func TestWatch_RateLimitsAndBreaker(t *testing.T) {
	clk := newFakeClock()
	r := newTestRegistry(t, "", func(o *Options) {
		o.Clock = clk
		o.Watch = WatchLimits{Window: time.Minute, PerJob: 3, Global: 5, DisableAfter: 20}
	})
	// Job a: 10 matches. 3 events pass, 7 are counted.
	a := start(t, r, StartRequest{Shell: `for i in $(seq 10); do echo "ERROR $i"; done`, Owner: "a", Watch: []string{"ERROR"}, Notify: true})
	waitDone(t, r, a.ID)
	waitEvent(t, r, "a", EventCompletion) // after every watch event of the job
	evs := ofType(drainEvents(t, r, "a"), EventWatch)
	// drainEvents after waitEvent sees nothing: re-read from the log.
	_ = evs
	all := allEvents(t, r)
	watchA := 0
	for _, ev := range all {
		if ev.Type == EventWatch && ev.Job == a.ID {
			watchA++
		}
	}
	if watchA != 3 {
		t.Errorf("job a sent %d watch events; want 3 (per-job limit)", watchA)
	}
	// Job b: 30 matches of one pattern: 2 pass (global 5 - 3), the
	// breaker trips once; the pattern is switched off at 20 suppressed.
	b := start(t, r, StartRequest{Shell: `for i in $(seq 30); do echo "FAIL $i"; done`, Owner: "b", Watch: []string{"FAIL"}, Notify: true})
	waitDone(t, r, b.ID)
	waitEvent(t, r, "b", EventCompletion)
	all = allEvents(t, r)
	counts := map[EventType]int{}
	for _, ev := range all {
		counts[ev.Type]++
	}
	if counts[EventBreakerTripped] != 1 || counts[EventWatchDisabled] != 1 || counts[EventWatch] != 5 {
		t.Errorf("event counts %v; want 1 trip, 1 disabled, 5 watch", counts)
	}
	// A window later the sweeper releases the breaker.
	testwait.Within(t, 10*time.Second, "sweeper timer", func() bool { return clk.Pending() >= 1 })
	clk.Advance(time.Minute)
	ev := waitEvent(t, r, "someone", EventBreakerReleased)
	if ev.Suppressed == 0 {
		t.Errorf("release = %+v; want a count of dropped matches", ev)
	}
}

// allEvents reads the whole event log, as a consumer that acknowledged
// nothing would see its broadcast part plus everyone's own.
func allEvents(t *testing.T, r *Registry) []Event {
	t.Helper()
	r.mu.Lock()
	size := r.ev.size
	r.mu.Unlock()
	var out []Event
	for _, owner := range []string{"a", "b", "agent", "c"} {
		evs, err := r.ev.readRange(owner, 0, size, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Consumer == owner || (ev.Consumer == "" && owner == "a") {
				out = append(out, ev)
			}
		}
	}
	return out
}

// After a handoff the new owner gets a handoff event and the completion;
// the old owner gets nothing more.
func TestHandoff_NewOwnerGetsCompletion(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "read x; exit 2", Owner: "old"})
	if _, err := r.Handoff(in.ID, "new", "please watch the build"); err != nil {
		t.Fatal(err)
	}
	r.CloseStdin(t.Context(), in.ID)
	waitDone(t, r, in.ID)
	ev := waitEvent(t, r, "new", EventCompletion)
	if ev.Exit == nil || ev.Exit.Code != 2 {
		t.Errorf("completion = %+v", ev)
	}
	if evs := drainEvents(t, r, "old"); len(evs) != 0 {
		t.Errorf("old owner got %+v", evs)
	}
	got, _ := r.Get(in.ID)
	if got.Owner != "new" || len(got.Notes) != 1 || got.Notes[0].Note != "please watch the build" {
		t.Errorf("info after handoff: %+v", got)
	}
	if l := r.List("new"); len(l) != 1 {
		t.Errorf("List(new) = %d jobs", len(l))
	}
}

// Events stay queued until acknowledged, across a restart of the
// registry; each is delivered once acknowledged.
func TestEvents_AckSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	for range 3 {
		in := start(t, r, StartRequest{Shell: "true", Notify: true})
		waitDone(t, r, in.ID)
	}
	evs, _ := r.Events(t.Context(), "agent", false)
	if len(evs) != 3 {
		t.Fatalf("%d events; want 3", len(evs))
	}
	r.Ack("agent", evs[0].Seq)
	r.Close()
	r2 := newTestRegistry(t, dir, nil)
	evs2, _ := r2.Events(t.Context(), "agent", false)
	if len(evs2) != 2 || evs2[0].Seq != evs[1].Seq {
		t.Fatalf("after restart: %+v; want the 2 unacknowledged", evs2)
	}
}

// A job that grows its own log by a terabyte of hole (ftruncate on its
// stdout, which is the log) costs the follower nothing: the line after
// the hole matches, and the job's completion comes, without the
// follower reading a terabyte of zeros first (about 45 minutes here:
// the bound catches that, not a slow machine). The control: the log is
// that big.
func TestWatch_HoleInTheLogIsSkipped(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: `echo before; truncate -s 1T /dev/stdout && echo "ERROR after"`, Owner: "agent", Watch: []string{"ERROR"}, Notify: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		waitDone(t, r, in.ID)
		waitEvent(t, r, "agent", EventCompletion)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the job's completion did not come: the follower is reading the hole")
	}
	r.mu.Lock()
	log := r.jobs[in.ID].logPath()
	r.mu.Unlock()
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 1<<40 {
		t.Fatalf("the log is %d bytes: the job made no hole, the test proves nothing", fi.Size())
	}
	watched := 0
	for _, ev := range allEvents(t, r) {
		if ev.Type == EventWatch && ev.Job == in.ID && strings.Contains(ev.Line, "ERROR after") {
			watched++
		}
	}
	if watched != 1 {
		t.Errorf("%d watch events for the line after the hole; want 1", watched)
	}
}
