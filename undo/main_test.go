package undo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/undo"
)

// helperEnv marks a run of the test binary as a helper process; see
// helpers below.
const helperEnv = "UNDO_TEST_HELPER"

// helpers are what the test binary does when re-executed as another
// process. Each takes the workspace root and the journal directory.
var helpers = map[string]func(root, dir string) error{
	// begin-and-exit begins a command, changes a file and exits without
	// ending it, as a runbox process killed mid-command would.
	"begin-and-exit": func(root, dir string) error {
		j, err := undo.Open(root, dir, undo.Options{})
		if err != nil {
			return err
		}
		if _, err := j.Begin(context.Background(), "crashed"); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, "crashed.txt"), []byte("half done"), 0o644)
	},
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		if err := helpers[name](os.Args[1], os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
