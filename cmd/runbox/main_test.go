package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files")

// asRunboxEnv, set to 1, makes the test binary run as runbox itself.
const asRunboxEnv = "RUNBOX_TEST_AS_RUNBOX"

func TestMain(m *testing.M) {
	// The job tests need this binary to play the job daemon and the
	// supervisor, as `runbox __daemon` and `runbox __supervise` do.
	if len(os.Args) > 1 && (os.Args[1] == "__daemon" || os.Args[1] == "__supervise") {
		main()
	}
	// Tests that need runbox as a process of its own (on a terminal of
	// its own, receiving signals) run this binary as runbox.
	if os.Getenv(asRunboxEnv) == "1" {
		main()
	}
	goleak.VerifyTestMain(m)
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
