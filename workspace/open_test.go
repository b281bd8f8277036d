package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/regular"
)

// TestOpenRegular_NeverWaitsOnFifo: a file the scan saw, replaced by a
// fifo (or by a link, to it or out of the tree) before it is hashed or
// sent, fails at once with regular.ErrNotRegular (or the link's refusal)
// instead of waiting for a writer or reading what the link names; a
// directory swapped for a link out of the tree gives nothing either; a
// regular file still reads. The control: the secret the links name is
// readable to this process.
func TestOpenRegular_NeverWaitsOnFifo(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "id_test")
	os.WriteFile(secret, []byte("secret"), 0o600)
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Fatalf("control: %q %v", b, err)
	}
	fifo := filepath.Join(dir, "swapped")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(secret, filepath.Join(dir, "link"))
	os.Symlink(outside, filepath.Join(dir, "sub")) // a directory swapped for a link
	os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	neverWaits(t, func() {
		if _, err := hashIn(root, "swapped"); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("hashIn(fifo) = %v; want regular.ErrNotRegular", err)
		}
		if _, err := copyChecked(new(discard), root, &Entry{Path: "swapped", Size: 1}); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("copyChecked(fifo) = %v; want regular.ErrNotRegular", err)
		}
		for _, p := range []string{"link", "sub/id_test"} {
			if _, err := hashIn(root, p); err == nil {
				t.Errorf("hashIn(%s) read through a link out of the tree", p)
			}
			if n, err := copyChecked(new(discard), root, &Entry{Path: p, Size: 6}); err == nil || n > 0 {
				t.Errorf("copyChecked(%s) = %d, %v: sent what a link out of the tree names", p, n, err)
			}
		}
		if _, err := hashIn(root, "plain"); err != nil {
			t.Errorf("hashIn(regular) = %v", err)
		}
	})
}

// neverWaits runs f and fails the test if it has not returned within a
// minute: f read a fifo and waits for a writer.
func neverWaits(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("waited on a fifo")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestReadIn_NeverWaitsOnFifo: what sync diff and apply read of the local
// tree (the project's .git/config, a file's content to compare) a
// command may have left as a fifo: the read fails at once, and the
// hooks path is simply not found, instead of runbox waiting for a writer
// for good (os.Root.ReadFile does).
func TestReadIn_NeverWaitsOnFifo(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, ".git", "config"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	neverWaits(t, func() {
		if _, err := readIn(root, ".git/config"); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("readIn(fifo) = %v; want regular.ErrNotRegular", err)
		}
		if got := hooksPath(root, dir); got != "" {
			t.Errorf("hooksPath = %q", got)
		}
	})
}
