package egress

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// goroutine the proxy starts must end by the time Close returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
