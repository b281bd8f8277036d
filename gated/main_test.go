package gated_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every environment a test opens is closed, with its goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
