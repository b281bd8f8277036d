package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// cliEvents collects the owner's queued events (runbox events) until
// cond holds of them, within a generous bound.
func cliEvents(t *testing.T, env map[string]string, what string, cond func([]procregistry.Event) bool) []procregistry.Event {
	t.Helper()
	var got []procregistry.Event
	deadline := time.Now().Add(30 * time.Second)
	for !cond(got) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; events: %+v", what, got)
		}
		out, _, _ := jcli(t, env, "events")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev procregistry.Event
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type != "" {
				got = append(got, ev)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

func countType(evs []procregistry.Event, job string, typ procregistry.EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Job == job && ev.Type == typ {
			n++
		}
	}
	return n
}

// start's --input-wait and --no-output-timeout reach the job: a job
// blocked in read gets one waiting_for_input event and finishes once
// fed; a silent job is ended by its no-output timeout, with that reason.
func TestJobs_CLIIdleOptions(t *testing.T) {
	env := jobsEnv(t)
	out, errs, code := jcli(t, env, "start", "--notify", "--input-wait", "500ms", "--", `echo ready; read x; echo "got $x"`)
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	reader := strings.TrimSpace(out)
	out, errs, code = jcli(t, env, "start", "--notify", "--no-output-timeout", "1s", "--", "sleep 30")
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	silent := strings.TrimSpace(out)

	evs := cliEvents(t, env, "the waiting_for_input event", func(evs []procregistry.Event) bool {
		return countType(evs, reader, procregistry.EventWaitingForInput) > 0
	})
	if _, errs, code := jcli(t, env, "submit", reader, "hello"); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	evs = append(evs, cliEvents(t, env, "both completions", func(more []procregistry.Event) bool {
		all := append(evs[:len(evs):len(evs)], more...)
		return countType(all, reader, procregistry.EventCompletion) > 0 && countType(all, silent, procregistry.EventCompletion) > 0
	})...)
	if n := countType(evs, reader, procregistry.EventWaitingForInput); n != 1 {
		t.Errorf("%d waiting_for_input events; want 1", n)
	}
	for _, ev := range evs {
		switch {
		case ev.Type != procregistry.EventCompletion:
		case ev.Job == reader && (ev.Reason != procregistry.ReasonExited || !strings.Contains(ev.Tail, "got hello")):
			t.Errorf("the reader's completion = %+v; want exited with its answer", ev)
		case ev.Job == silent && (ev.Reason != procregistry.ReasonNoOutputTimeout || ev.KilledBy != procregistry.KilledByNoOutput):
			t.Errorf("the silent job's completion = %+v; want its no-output timeout", ev)
		}
	}
}
