package procregistry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/runbox/runbox/envs"
)

// A job runs detached, its output lands in the log, and its exit code is
// learned. Breaks if the supervisor loses output or status.
func TestRegistry_StartWaitLog(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "echo hello; echo err >&2; exit 3", Notify: true})
	if in.Status != StatusRunning && !in.Status.Finished() {
		t.Fatalf("status after start = %s", in.Status)
	}
	got := waitDone(t, r, in.ID)
	if got.Status != StatusExited || got.Exit == nil || got.Exit.Code != 3 {
		t.Fatalf("after wait: %+v", got)
	}
	if s := logText(t, r, in.ID); s != "hello\nerr\n" {
		t.Errorf("log = %q", s)
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Job != in.ID || ev.Reason != ReasonExited || ev.Exit.Code != 3 || !strings.Contains(ev.Tail, "hello") {
		t.Errorf("completion = %+v", ev)
	}
}

// A command that cannot start is a failed job with a completion, not an
// error of Start. Breaks if exec failures vanish or hang.
func TestRegistry_CommandCannotStart(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Args: []string{"/nonexistent/program"}, Notify: true})
	if in.Status != StatusFailed || in.Exit == nil || in.Exit.Code != envs.ExitNotFound || in.Error == "" {
		t.Fatalf("start of a missing program: %+v", in)
	}
	ev := waitEvent(t, r, "agent", EventCompletion)
	if ev.Reason != ReasonFailedToStart || ev.Message == "" {
		t.Errorf("completion = %+v", ev)
	}
	in = start(t, r, StartRequest{Shell: "true", Dir: "/nonexistent/dir", Notify: true})
	if in.Status != StatusFailed {
		t.Fatalf("start in a missing dir: %+v", in)
	}
}

// Retried starts with one key make one job, even concurrently.
func TestRegistry_IdempotencyKey(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			in, err := r.Start(context.Background(), StartRequest{Shell: "sleep 30", Owner: "agent", Key: "k1"})
			if err != nil {
				t.Error(err)
			}
			ids[i] = in.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids = %v; want one job", ids)
		}
	}
	if n := len(r.List("agent")); n != 1 {
		t.Fatalf("List has %d jobs; want 1", n)
	}
	other := start(t, r, StartRequest{Shell: "sleep 30", Owner: "other", Key: "k1"})
	if other.ID == ids[0] {
		t.Error("a key is per owner, but another owner got the same job")
	}
}

// Ids resolve by unique prefix; an ambiguous or unknown one is an error
// callers can branch on.
func TestRegistry_Prefix(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	a := start(t, r, StartRequest{Shell: "true"})
	if _, err := r.Get(a.ID[:6]); err != nil {
		t.Fatalf("Get(prefix) = %v", err)
	}
	if _, err := r.Get("zz"); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("Get(unknown) = %v; want ErrNotFound", err)
	}
	for range 40 {
		start(t, r, StartRequest{Shell: "true"})
	}
	if _, err := r.Get(""); !errors.Is(err, envs.ErrNotFound) && !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Get(\"\") = %v", err)
	}
	// 41 jobs over 16 first hex digits: some digit is shared.
	seen := map[byte]int{}
	for _, in := range r.List("") {
		seen[in.ID[0]]++
	}
	for c, n := range seen {
		if n > 1 {
			if _, err := r.Get(string(c)); !errors.Is(err, ErrAmbiguous) {
				t.Errorf("Get(%q) = %v; want ErrAmbiguous", c, err)
			}
			break
		}
	}
}
