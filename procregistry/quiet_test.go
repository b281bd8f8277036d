package procregistry

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// A job blocked reading its stdin gets one waiting-for-input event per
// wait, with the output tail; a submit answers it, and the next read is
// a new wait. On a pipe and on a terminal. Without the probe of the
// processes' state no event would come (the output says nothing of a
// read); a duplicate would show if an episode were not remembered.
func TestWaitingForInput_OnePerWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		pty  *envs.WindowSize
	}{
		{"pipe", nil},
		{"pty", &envs.WindowSize{Rows: 24, Cols: 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, "", func(o *Options) { o.NoticeGap = 50 * time.Millisecond })
			in := start(t, r, StartRequest{
				Shell: `echo "name?"; read a; echo "again?"; read b; echo "got $a $b"`,
				PTY:   tc.pty, Notify: true, InputWait: MinIdle,
			})
			for i, answer := range []string{"one", "two"} {
				ev := waitEvent(t, r, "agent", EventWaitingForInput)
				if want := []string{"name?", "again?"}[i]; !strings.Contains(ev.Tail, want) || ev.Job != in.ID {
					t.Errorf("wait %d: event %+v; want job %s with %q in the tail", i, ev, in.ID, want)
				}
				// Room for a second event of the same wait, were there one.
				<-time.After(4 * MinIdle)
				if evs := ofType(drainEvents(t, r, "agent"), EventWaitingForInput); len(evs) != 0 {
					t.Fatalf("wait %d: %d more waiting-for-input events: %+v", i, len(evs), evs)
				}
				if err := r.Submit(t.Context(), in.ID, answer); err != nil {
					t.Fatal(err)
				}
			}
			done := waitEvent(t, r, "agent", EventCompletion)
			if done.Reason != ReasonExited || !strings.Contains(done.Tail, "got one two") {
				t.Errorf("completion = %+v; want exited with the answers", done)
			}
			if evs := drainEvents(t, r, "agent"); len(evs) != 0 {
				t.Errorf("events after the completion: %+v", evs)
			}
		})
	}
}

// Quiet is not waiting for input: a job that sleeps with its stdin open
// gets one quiet event per quiet spell and never a waiting-for-input
// event.
func TestQuiet_OnePerSpellNotInput(t *testing.T) {
	r := newTestRegistry(t, "", func(o *Options) { o.NoticeGap = 50 * time.Millisecond })
	in := start(t, r, StartRequest{
		Shell:  `echo a; sleep 3; echo b; sleep 3`,
		Notify: true, QuietAfter: time.Second, InputWait: MinIdle,
	})
	waitDone(t, r, in.ID)
	evs := allEvents(t, r)
	var quiet []Event
	for _, ev := range evs {
		switch ev.Type {
		case EventQuiet:
			quiet = append(quiet, ev)
		case EventWaitingForInput:
			t.Errorf("waiting-for-input event for a job that never reads: %+v", ev)
		}
	}
	if len(quiet) != 2 || !strings.HasSuffix(quiet[0].Tail, "a\n") || !strings.HasSuffix(quiet[1].Tail, "b\n") {
		t.Errorf("quiet events = %+v; want two, after a and after b", quiet)
	}
}

// NoOutputTimeout ends a silent job (status killed, KilledBy and the
// completion's reason name it) and leaves one that keeps writing alone.
func TestNoOutputTimeout_EndsOnlySilentJobs(t *testing.T) {
	for _, tc := range []struct {
		name, shell string
		want        Reason
	}{
		{"silent", `sleep 30`, ReasonNoOutputTimeout},
		{"talking", `for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.2; done`, ReasonExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, "", nil)
			in := start(t, r, StartRequest{Shell: tc.shell, Notify: true, NoOutputTimeout: 1500 * time.Millisecond})
			info := waitDone(t, r, in.ID)
			ev := waitEvent(t, r, "agent", EventCompletion)
			if ev.Reason != tc.want {
				t.Fatalf("completion = %+v; want reason %s", ev, tc.want)
			}
			if tc.want == ReasonNoOutputTimeout && (info.Status != StatusKilled || info.KilledBy != KilledByNoOutput || ev.KilledBy != KilledByNoOutput) {
				t.Errorf("info = %+v, event = %+v; want killed by %s", info, ev, KilledByNoOutput)
			}
		})
	}
}
