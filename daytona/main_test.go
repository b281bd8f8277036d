package daytona_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/internal/testproc"
)

// agentBin is the static runbox-agent built once by TestMain.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "daytona-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agentBin, "-ldflags=-s -w"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	// The SDK's HTTP clients keep idle keep-alive connections, which end
	// with their transport's idle timeout, not with the test.
	if err := goleak.Find(goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop")); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		code = 1
	}
	os.Exit(code)
}
