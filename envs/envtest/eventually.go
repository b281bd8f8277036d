package envtest

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test if d passes
// first. It is for conditions no channel announces (a process gone from
// /proc, a cgroup removed); the deadline only turns a hang into a failure.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-time.After(5 * time.Millisecond) // poll interval, bounded by the deadline
	}
}
