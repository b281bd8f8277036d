package regular_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/regular"
)

// TestOpen: a fifo (directly or through a link) is refused at once with
// ErrNotRegular, a link is refused without follow, and a regular file
// opens either way.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	fifo, link, plain := filepath.Join(dir, "fifo"), filepath.Join(dir, "link"), filepath.Join(dir, "plain")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(plain, link)
	os.WriteFile(plain, []byte("x"), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, follow := range []bool{false, true} {
			if _, err := regular.Open(fifo, follow); !errors.Is(err, regular.ErrNotRegular) {
				t.Errorf("Open(fifo, %v) = %v; want ErrNotRegular", follow, err)
			}
			f, err := regular.Open(plain, follow)
			if err != nil {
				t.Errorf("Open(plain, %v): %v", follow, err)
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != "x" {
				t.Errorf("read %q", b)
			}
		}
		if _, err := regular.Open(link, false); err == nil {
			t.Error("Open(link, false) followed the link")
		}
		if f, err := regular.Open(link, true); err != nil {
			t.Errorf("Open(link, true): %v", err)
		} else {
			f.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("waited on a fifo")
	}
}
