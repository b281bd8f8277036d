//go:build linux

package inotify_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runbox/runbox/internal/inotify"
	"golang.org/x/sys/unix"
)

// TestDrain: the events queued for a watched directory come one call
// each, named for entries of the directory and not for the directory
// itself, and an empty queue ends the drain with nothing missed.
func TestDrain(t *testing.T) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	dir := t.TempDir()
	wd, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_DELETE_SELF)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	calls := 0
	if !inotify.Drain(fd, buf, func(int32, uint32, bool) { calls++ }) || calls != 0 {
		t.Fatalf("an empty queue: %d calls", calls)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	var created, self int
	ok := inotify.Drain(fd, buf, func(w int32, mask uint32, named bool) {
		if w != int32(wd) {
			t.Errorf("event for watch %d, want %d", w, wd)
		}
		switch {
		case mask&unix.IN_CREATE != 0 && named:
			created++
		case mask&unix.IN_DELETE_SELF != 0 && !named:
			self++
		}
	})
	if !ok || created != 3 || self != 1 {
		t.Fatalf("Drain = %v: %d creations, %d removals of the directory itself; want 3 and 1", ok, created, self)
	}
}
