package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSandbox_TmpParentTakenRefused: where another user took the name of
// the sessions' TMPDIR parent first (a link to a directory of theirs, or
// a directory open to others), a confined environment refuses to open
// rather than putting its TMPDIR in their hands.
func TestSandbox_TmpParentTakenRefused(t *testing.T) {
	for name, plant := range map[string]func(parent, theirs string) error{
		"link": func(parent, theirs string) error { return os.Symlink(theirs, parent) },
		"open": func(parent, theirs string) error {
			if err := os.Mkdir(parent, 0o777); err != nil {
				return err
			}
			return os.Chmod(parent, 0o777)
		},
	} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			theirs := filepath.Join(tmp, "theirs")
			os.Mkdir(theirs, 0o777)
			if err := plant(filepath.Join(tmp, fmt.Sprintf("runbox-tmp-%d", os.Getuid())), theirs); err != nil {
				t.Fatal(err)
			}
			e, err := New(Options{Dir: t.TempDir(), NoPrestart: true})
			if err == nil {
				e.Close(context.Background())
				t.Fatal("New opened a confined environment with its TMPDIR parent in another's hands")
			}
			if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
				t.Errorf("a session directory was made in theirs: %v", ents)
			}
		})
	}
}
