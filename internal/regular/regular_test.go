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

// TestReadFile: a regular file is read whole up to the bound; one over
// it is refused with ErrTooLarge, a link with an error (never what it
// points to), and a device or a fifo with ErrNotRegular, at once.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	secret := filepath.Join(dir, "secret")
	link := filepath.Join(dir, "link")
	fifo := filepath.Join(dir, "fifo")
	os.WriteFile(plain, []byte("0123456789"), 0o600)
	os.WriteFile(secret, []byte("canary"), 0o600)
	os.Symlink(secret, link)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		max  int64
		want string
		err  error
	}{
		{plain, 10, "0123456789", nil},
		{plain, 9, "", regular.ErrTooLarge},
		{"/dev/zero", 1 << 20, "", regular.ErrNotRegular},
		{fifo, 1 << 20, "", regular.ErrNotRegular},
	} {
		b, err := regular.ReadFile(tc.path, tc.max)
		if string(b) != tc.want || (tc.err == nil) != (err == nil) || tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("ReadFile(%s, %d) = %q, %v; want %q, %v", tc.path, tc.max, b, err, tc.want, tc.err)
		}
	}
	if b, err := regular.ReadFile(link, 1<<20); err == nil || string(b) == "canary" {
		t.Errorf("ReadFile(link) = %q, %v; want an error", b, err)
	}
}
