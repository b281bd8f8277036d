package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// DefaultAwakePoll is how often a session whose sandbox is kept awake
// looks whether a keep-awake job still runs (Options.AwakePoll).
const DefaultAwakePoll = 30 * time.Second

// awake keeps a session's sandbox from its provider's idle clock
// ([envs.Waker]) while one of the session's keep-awake jobs runs: the
// first such job turns the clock off, and a watcher gives it back once
// none runs. The watcher is the session's: Close stops it.
type awake struct {
	mu     sync.Mutex
	cancel context.CancelFunc // the watcher's; nil when the clock runs
	done   chan struct{}
	closed bool
}

// keepAwake turns the sandbox's idle clock off for the job in (a
// keep-awake job of o just started, or just made keep-awake) and watches
// for the end of the session's keep-awake jobs. A failure is said in the
// job's warning: the job runs, but the provider may stop its sandbox.
func (o *OwnedJobs) keepAwake(ctx context.Context, in procregistry.Info) procregistry.Info {
	if !in.Lifetime.KeepsAwake() || in.Status.Finished() {
		return in
	}
	if err := o.ss.keepAwake(ctx, o); err != nil {
		in.Warning = joinWarning(in.Warning, "the sandbox may still be stopped by its provider: "+err.Error())
	}
	return in
}

func joinWarning(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (ss *Session) keepAwake(ctx context.Context, o *OwnedJobs) error {
	ss.mu.Lock()
	env := ss.env
	ss.mu.Unlock()
	w, ok := env.(envs.Waker)
	if !ok {
		return nil
	}
	a := &ss.awake
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.cancel != nil {
		return nil
	}
	if err := w.KeepAwake(ctx, true); err != nil {
		if errors.Is(err, envs.ErrUnsupported) {
			return nil
		}
		return fmt.Errorf("service: keep the sandbox awake: %w", err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go ss.watchAwake(wctx, a.done, w, o)
	return nil
}

// watchAwake gives the sandbox its idle clock back once no keep-awake job
// of the session runs, looking every AwakePoll.
func (ss *Session) watchAwake(ctx context.Context, done chan struct{}, w envs.Waker, o *OwnedJobs) {
	defer close(done)
	t := time.NewTicker(ss.svc.awakePoll())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if still, err := o.KeepsAwake(ctx); err != nil || still {
			continue // an unreachable registry is no reason to let it sleep
		}
		a := &ss.awake
		a.mu.Lock()
		err := w.KeepAwake(ctx, false)
		if err == nil {
			a.cancel()
			a.cancel = nil
		}
		a.mu.Unlock()
		if err == nil {
			ss.svc.log.Debug("service: no keep-awake job runs: the sandbox's idle clock runs again", "session", ss.ID)
			return
		}
		ss.svc.log.Warn("service: giving the sandbox its idle clock back", "session", ss.ID, "err", err)
	}
}

// stopAwake stops the watcher, for Close: the sandbox goes with the
// session, or (a task's) keeps no auto-stop anyway.
func (ss *Session) stopAwake() {
	a := &ss.awake
	a.mu.Lock()
	a.closed = true
	cancel, done := a.cancel, a.done
	a.cancel = nil
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (s *Service) awakePoll() time.Duration {
	if s.opts.AwakePoll > 0 {
		return s.opts.AwakePoll
	}
	return DefaultAwakePoll
}
