package main

import (
	"context"
	"errors"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// A reader of jobs (wait, logs -f, events -f) outlives the job daemon it
// talks to. When the daemon dies or is restarted, the reader starts one
// again, as every jobs command does when none answers, and asks again
// from where it was: a log by the byte offset after the last byte
// printed, events after the last one printed (each is printed once even
// if its acknowledgement was lost with the daemon), and a wait by asking
// the new daemon, which recovers the job from the state directory and so
// reports its real exit status. The job itself never depended on the
// daemon: its supervisor runs on, and writes its output and exit status
// to the state directory.

// Bounds of a reader's reconnection.
const (
	// reconnectFor is how long a reader keeps trying to reach a daemon
	// after losing one before it gives up with the error.
	reconnectFor = time.Minute
	// reconnectMin and reconnectMax bound the wait before each attempt;
	// it doubles while the daemon keeps getting lost.
	reconnectMin = 50 * time.Millisecond
	reconnectMax = 2 * time.Second
	// reconnectHealthy is how long a call must have run before its loss
	// counts as a new incident (the wait starts again at reconnectMin).
	reconnectHealthy = 10 * time.Second
)

// daemonLost reports whether err means the job daemon went away: nothing
// answers at its socket, or the connection ended before the answer.
func daemonLost(err error) bool {
	return errors.Is(err, procregistry.ErrConnLost) || errors.Is(err, procregistry.ErrUnreachable)
}

// withDaemon runs call with c, and again with a client of a new daemon
// each time the daemon is lost, until call returns anything else, ctx
// ends, or no daemon could be reached for reconnectFor. call must
// continue from where the previous attempt stopped.
func (a *app) withDaemon(ctx context.Context, c *procregistry.Client, call func(*procregistry.Client) error) error {
	delay := reconnectMin
	for {
		began := time.Now()
		err := call(c)
		if err == nil || !daemonLost(err) || ctx.Err() != nil {
			return err
		}
		if time.Since(began) > reconnectHealthy {
			delay = reconnectMin
		}
		a.log.Debug("runbox: job daemon lost; reconnecting", "err", err)
		if c, err = a.reconnect(ctx, &delay, err); err != nil {
			return err
		}
	}
}

// reconnect waits, then returns a client of a daemon that answers
// (started if none does), trying with growing waits for up to
// reconnectFor. It gives up at once on a refused state directory: no
// later attempt would do better.
func (a *app) reconnect(ctx context.Context, delay *time.Duration, cause error) (*procregistry.Client, error) {
	deadline := time.Now().Add(reconnectFor)
	for {
		t := time.NewTimer(*delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, cause
		}
		*delay = min(2**delay, reconnectMax)
		c, err := a.jobsClient(ctx)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, procregistry.ErrUnsafeStateDir) || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
	}
}
