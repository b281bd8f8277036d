package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/testproc"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files")

// runMainEnv set to 1 makes this test binary run as runbox itself, for
// tests that need a real process (signals, exit statuses).
const runMainEnv = "RUNBOX_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	// The job tests need this binary to play the job daemon and the
	// supervisor, as `runbox __daemon` and `runbox __supervise` do.
	// It confines local commands too, as `runbox __confine` does.
	if len(os.Args) > 1 && (os.Args[1] == "__daemon" || os.Args[1] == "__supervise" || os.Args[1] == "__reap" || os.Args[1] == confine.Command) || os.Getenv(runMainEnv) == "1" {
		main()
	}
	code := m.Run()
	// Job commands start the daemon detached, as they should; the tests
	// stop what they started.
	testproc.StopDaemons(os.Args[0])
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// cli runs runbox with args the way a user would, with its streams
// captured, and returns stdout, stderr and the exit status main would use.
func cli(t *testing.T, stdin string, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return "" // never read the developer's own configuration
		}
		return os.Getenv(k)
	}
	a := newApp(strings.NewReader(stdin), &out, &errb, getenv)
	err := a.execute(context.Background(), args)
	return out.String(), errb.String(), exitCode(err)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
