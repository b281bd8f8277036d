package approval

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: the broker
// and the terminal prompter must stop everything they start.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestGate returns a Gate with the default policy.
func newTestGate(t testing.TB) *Gate {
	t.Helper()
	g, err := New(Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}
