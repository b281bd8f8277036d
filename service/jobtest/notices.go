package jobtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// notices collects the events a session's pump delivers, as a front end
// receives them: each delivered event is kept, a second delivery of one
// included, so that "exactly once" can be counted.
type notices struct {
	mu   sync.Mutex
	evs  []procregistry.Event
	grew chan struct{} // closed, and replaced, at each event
}

func newNotices() *notices { return &notices{grew: make(chan struct{})} }

// add is the pump's delivery: it never fails, so every event is
// acknowledged once it is kept.
func (n *notices) add(_ context.Context, ev procregistry.Event) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evs = append(n.evs, ev)
	close(n.grew)
	n.grew = make(chan struct{})
	return nil
}

// of returns the events of type typ delivered for job, in order, and a
// channel closed at the next delivery.
func (n *notices) of(job string, typ procregistry.EventType) ([]procregistry.Event, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []procregistry.Event
	for _, ev := range n.evs {
		if ev.Job == job && ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out, n.grew
}

// count is how many events of type typ were delivered for job.
func (n *notices) count(job string, typ procregistry.EventType) int {
	evs, _ := n.of(job, typ)
	return len(evs)
}

// await waits until at least want events of type typ were delivered for
// job and returns them all.
func (n *notices) await(t *testing.T, job string, typ procregistry.EventType, want int) []procregistry.Event {
	t.Helper()
	deadline := time.NewTimer(hang)
	defer deadline.Stop()
	for {
		evs, grew := n.of(job, typ)
		if len(evs) >= want {
			return evs
		}
		select {
		case <-grew:
		case <-deadline.C:
			t.Fatalf("job %s: %d %s event(s) in %v; want %d (all delivered: %+v)", job, len(evs), typ, hang, want, n.all())
		}
	}
}

// all returns every delivered event, for failure messages.
func (n *notices) all() []procregistry.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]procregistry.Event(nil), n.evs...)
}
