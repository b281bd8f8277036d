package envs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// spillOnce makes a Capture spill into the default directory and returns
// the spill file's path.
func spillOnce(t *testing.T) string {
	t.Helper()
	c := envs.NewCapture(4, "")
	c.Write([]byte("0123456789"))
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if c.SpillPath() == "" {
		t.Fatal("no spill file for 10 bytes over a limit of 4")
	}
	return c.SpillPath()
}

// TestCapture_SpillsInPrivateDefaultDir: without a directory of its own, a
// Capture spills into runbox's one directory for spills, which is private
// to this user.
func TestCapture_SpillsInPrivateDefaultDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	path := spillOnce(t)
	dir, err := envs.DefaultSpillDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(dir, os.Getenv("TMPDIR")) {
		t.Fatalf("spill file %s is not in the default directory %s under $TMPDIR", path, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spill directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(path); string(b) != "0123456789" {
		t.Errorf("spill file holds %q", b)
	}
}

// TestDefaultSpillDir_RefusesOpenDir: a directory of that name that other
// users could write to is not used (a spill there could be read or
// replaced); the Capture then spills to a private file of its own in the
// temporary directory.
func TestDefaultSpillDir_RefusesOpenDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := envs.DefaultSpillDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := envs.DefaultSpillDir(); err == nil {
		t.Fatalf("DefaultSpillDir accepted %s with mode 0777", dir)
	}
	path := spillOnce(t)
	if filepath.Dir(path) != tmp {
		t.Errorf("spill went to %s; want a private file directly in %s", path, tmp)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode %v; want 0600", fi.Mode().Perm())
	}
}

// TestCapture_PrunesOldSpills: making a spill removes spills older than
// SpillRetention from the default directory, and leaves younger spills and
// other files alone.
func TestCapture_PrunesOldSpills(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := envs.DefaultSpillDir()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-envs.SpillRetention - time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("runbox-output-111.log", old)
	young := mk("runbox-output-222.log", time.Now().Add(-time.Hour))
	other := mk("notes.txt", old)
	fresh := spillOnce(t)
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale spill %s still there (%v)", stale, err)
	}
	for _, p := range []string{young, other, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestResult_RemoveSpills removes both spill files and forgets their
// paths; a second call has nothing left to do.
func TestResult_RemoveSpills(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	res := &envs.Result{SpillPath: spillOnce(t), StderrSpillPath: spillOnce(t)}
	paths := []string{res.SpillPath, res.StderrSpillPath}
	if err := res.RemoveSpills(); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if res.SpillPath != "" || res.StderrSpillPath != "" {
		t.Errorf("paths kept: %+v", res)
	}
	if err := res.RemoveSpills(); err != nil {
		t.Errorf("second RemoveSpills: %v", err)
	}
}
