package envtest

import (
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
)

// Eventually polls cond until it holds, and fails the test if d passes
// first. It is [testwait.Within], kept here for the backends' tests that
// already wait through this package.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, d, what, cond)
}
