package testwait

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestUntil_ReturnsOnceTrue: a condition that comes true ends the wait
// without failing the test.
func TestUntil_ReturnsOnceTrue(t *testing.T) {
	n := 0
	Until(t, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times; want 3", n)
	}
}

// fatalRecorder is a real testing.TB whose Fatalf is recorded instead of
// failing the test that runs it.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestWithin_FailsAfterBound: a condition that never holds fails the
// test once the bound passes, naming what it waited for.
func TestWithin_FailsAfterBound(t *testing.T) {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Within(r, time.Millisecond, "nothing", func() bool { return false })
	}()
	<-done
	if want := "timed out after 1ms waiting for nothing"; r.msg != want {
		t.Fatalf("failure = %q; want %q", r.msg, want)
	}
}
