package service

import (
	"context"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// DefaultRedeliver is how long [OwnedJobs.Deliver] waits before it tries
// again after a failed delivery, when its retry argument is zero.
const DefaultRedeliver = 2 * time.Second

// Deliver pumps the session's job events (completions, heartbeats, watch
// matches, handoffs) to deliver, oldest first, until ctx ends. An event
// is acknowledged only after deliver returned nil for it, and deliveries
// are serialised with [OwnedJobs.TakeEvents], so each event reaches the
// front end once: through deliver or through TakeEvents, never both.
//
// When deliver fails (no client attached to receive it) the event stays
// queued, visible to TakeEvents, and Deliver tries again after retry
// (zero: [DefaultRedeliver]). If the registry cannot be reached, it also
// waits retry before asking again. The one case of a second delivery is
// a registry lost between a delivery and its acknowledgement.
//
// Deliver runs in the caller's goroutine and returns nil when ctx ends.
func (o *OwnedJobs) Deliver(ctx context.Context, deliver func(context.Context, procregistry.Event) error, retry time.Duration) error {
	if retry <= 0 {
		retry = DefaultRedeliver
	}
	for ctx.Err() == nil {
		_, err := o.jobs.Events(ctx, o.Owner(), true)
		if err == nil {
			err = o.flush(ctx, deliver)
		}
		if err == nil {
			continue
		}
		t := time.NewTimer(retry)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return nil
}

// flush delivers what is queued now, acknowledging each delivered event.
func (o *OwnedJobs) flush(ctx context.Context, deliver func(context.Context, procregistry.Event) error) error {
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	evs, err := o.jobs.Events(ctx, o.Owner(), false)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if o.dropHeld(ev) {
			// A yielding start returned this job's end (see yield.go).
		} else if err := deliver(ctx, ev); err != nil {
			return err
		}
		if err := o.jobs.Ack(ctx, o.Owner(), ev.Seq); err != nil {
			return err
		}
	}
	return nil
}

// TakeEvents returns the events queued for the session and not yet
// delivered, and acknowledges them: the caller now holds them (a tool
// result that lists them). It never blocks waiting for events.
func (o *OwnedJobs) TakeEvents(ctx context.Context) ([]procregistry.Event, error) {
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	evs, err := o.jobs.Events(ctx, o.Owner(), false)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	if err := o.jobs.Ack(ctx, o.Owner(), evs[len(evs)-1].Seq); err != nil {
		return nil, err
	}
	kept := evs[:0]
	for _, ev := range evs {
		if !o.dropHeld(ev) {
			kept = append(kept, ev)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, nil
}
