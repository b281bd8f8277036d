package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// AgentMain is the TestMain of a sandboxed backend's tests: it builds
// the static runbox-agent once into a temporary directory and puts its
// path in *agent, runs the tests, removes the directory, and fails a
// passing run that left goroutines behind (ignoring those opts name, as
// goleak.Find does). It returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(testproc.AgentMain(m, &agentBin)) }
func AgentMain(m *testing.M, agent *string, opts ...goleak.Option) int {
	dir, err := os.MkdirTemp("", "runbox-agent-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*agent = filepath.Join(dir, "runbox-agent")
	if err := BuildAgent(*agent, "-ldflags=-s -w"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := goleak.Find(opts...); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		code = 1
	}
	return code
}

// IdleHTTPConns are goleak options for the HTTP client connections an
// SDK keeps alive between requests: they end with their transport's
// idle timeout, not with the test.
func IdleHTTPConns() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}
}
