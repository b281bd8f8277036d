package testwait

import (
	"testing"
	"time"
)

// Bound is how long [Until] waits before it fails the test.
const Bound = 2 * time.Minute

// Interval is how often a condition is polled.
const Interval = 20 * time.Millisecond

// Until polls cond until it holds, and fails the test if [Bound] passes
// first. what names the condition in the failure.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Bound, what, cond)
}

// Within is [Until] with the bound d, for a test whose condition can
// take longer than Bound (or whose bound is part of what it checks).
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(Interval) // the poll interval, bounded by the deadline
	}
}
