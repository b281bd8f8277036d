package termination

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultReapInterval is how often a [Reaper] retries when given no interval.
const DefaultReapInterval = 30 * time.Second

// Reaper keeps containers that could not be removed (a scope systemd would
// not stop, a cgroup that still held a process) and retries them, so a
// failed removal is remembered instead of dropped. The caller owns it:
// [NewReaper] starts one goroutine, [Reaper.Close] stops and joins it.
type Reaper struct {
	log *slog.Logger
	mu  sync.Mutex
	cs  []Container

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewReaper starts a Reaper that retries every interval (zero means
// [DefaultReapInterval]; negative means never on its own: only
// [Reaper.Retry] and [Reaper.Close] retry). A nil logger discards.
func NewReaper(interval time.Duration, logger *slog.Logger) *Reaper {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if interval == 0 {
		interval = DefaultReapInterval
	}
	r := &Reaper{log: logger, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop(interval)
	return r
}

func (r *Reaper) loop(interval time.Duration) {
	defer close(r.done)
	if interval < 0 {
		<-r.stop
		return
	}
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tk.C:
			ctx, cancel := context.WithTimeout(context.Background(), interval)
			if err := r.Retry(ctx); err != nil {
				r.log.Warn("termination: containers still pending", "err", err)
			}
			cancel()
		}
	}
}

// Add hands c to the reaper.
func (r *Reaper) Add(c Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cs = append(r.cs, c)
}

// Pending lists the containers not yet removed.
func (r *Reaper) Pending() []Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Container(nil), r.cs...)
}

// Retry kills and removes every pending container now. Those that still
// fail stay pending; their errors are returned joined.
func (r *Reaper) Retry(ctx context.Context) error {
	r.mu.Lock()
	cs := r.cs
	r.cs = nil
	r.mu.Unlock()
	var keep []Container
	var errs []error
	for _, c := range cs {
		if err := reap(ctx, c); err != nil {
			keep = append(keep, c)
			errs = append(errs, err)
		}
	}
	r.mu.Lock()
	r.cs = append(r.cs, keep...)
	r.mu.Unlock()
	return errors.Join(errs...)
}

// reap kills what is left in c (its tree's parent is long gone) and removes it.
func reap(ctx context.Context, c Container) error {
	if empty, err := c.Empty(); err != nil || !empty {
		if err := c.Kill(ctx); err != nil {
			return fmt.Errorf("termination: reap %v container: %w", c.Mechanism(), err)
		}
	}
	if err := c.Remove(ctx); err != nil {
		return fmt.Errorf("termination: reap %v container: %w", c.Mechanism(), err)
	}
	return nil
}

// Close stops the retry goroutine, waits for it, and retries once more.
// It returns an error naming what is still pending; those containers stay
// in [Reaper.Pending], never silently dropped.
func (r *Reaper) Close(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	<-r.done
	return r.Retry(ctx)
}
