package procregistry

import "time"

// Clock is the registry's source of time for everything with a meaning
// in time: heartbeat intervals, watch-pattern rate windows, the global
// breaker and the retention of finished jobs. Tests pass a fake one and
// advance it instead of sleeping.
//
// Polling a file for growth is not such a meaning, and uses real timers
// (see [Options].PollInterval).
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a [Clock].
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// realClock is the Clock used when [Options].Clock is nil.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
