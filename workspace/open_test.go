package workspace

import (
	"errors"
	"github.com/runbox/runbox/internal/regular"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegular_NeverWaitsOnFifo: a file the scan saw, replaced by a
// fifo (or a link) before it is hashed or sent, fails at once with
// regular.ErrNotRegular (or the link's refusal) instead of waiting for a writer;
// a regular file still reads.
func TestOpenRegular_NeverWaitsOnFifo(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "swapped")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(fifo, link)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := hashFile(fifo); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("hashFile(fifo) = %v; want regular.ErrNotRegular", err)
		}
		if _, err := copyChecked(new(discard), fifo, &Entry{Path: "swapped", Size: 1}); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("copyChecked(fifo) = %v; want regular.ErrNotRegular", err)
		}
		if _, err := hashFile(link); err == nil {
			t.Error("hashFile followed a link put in a file's place")
		}
		if _, err := hashFile(plain); err != nil {
			t.Errorf("hashFile(regular) = %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("waited on a fifo")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
