//go:build linux

package confine_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/confine"
)

// helperSockets is the argv[0] under which the test binary tries the
// system calls the seccomp filter decides on (see syscallProbe).
const helperSockets = "confine-helper-sockets"

// helperThread is the argv[0] under which the test binary starts a
// program from a confined thread of its own (see threadHelper).
const helperThread = "confine-helper-thread"

func TestMain(m *testing.M) {
	// The test binary plays the trampoline, as the runbox binary does,
	// and the helper programs that tests run confined.
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:]))
	}
	if os.Args[0] == helperSockets {
		os.Exit(syscallProbe())
	}
	if os.Args[0] == helperThread {
		os.Exit(threadHelper(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
