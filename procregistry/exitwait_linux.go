package procregistry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/termination"
)

// The registry waits for processes it did not start, and that its
// supervisor no longer watches, without polling: a pidfd becomes readable
// when its process exits, and a cgroup2 directory's cgroup.events file is
// modified (an inotify event) when the cgroup's populated state changes.
// Both fds go into Go's poller, so a waiting goroutine costs nothing until
// the kernel has news, and a cancelled ctx wakes it through a deadline.

// waitProcExit returns once p has exited (or its PID names another
// process: p is gone either way), or with ctx's error when ctx ends.
func waitProcExit(ctx context.Context, p termination.Proc) error {
	if p.PID <= 0 {
		return nil
	}
	fd, err := unix.PidfdOpen(p.PID, unix.PIDFD_NONBLOCK)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
		// Before Linux 5.10 (no PIDFD_NONBLOCK) or 5.3 (no pidfd).
		return pollUntil(ctx, func() bool { return !p.Alive() })
	case err != nil:
		return fmt.Errorf("procregistry: pidfd of %v: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	// Checked after the open: from here on the pidfd pins the process
	// that had p's start time, so a recycled PID cannot fool the wait.
	if !p.Alive() {
		return nil
	}
	return waitReadable(ctx, f)
}

// waitCgroupEmpty returns once the cgroup2 directory dir holds no process
// (or is gone), or with ctx's error when ctx ends.
func waitCgroupEmpty(ctx context.Context, dir string) error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("procregistry: inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	events := filepath.Join(dir, "cgroup.events")
	if _, err := unix.InotifyAddWatch(fd, events, unix.IN_MODIFY); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // the cgroup is gone
		}
		return fmt.Errorf("procregistry: watch %s: %w", events, err)
	}
	buf := make([]byte, 4096)
	for {
		// Read after the watch is in place: a change between the two
		// leaves an event queued.
		if !cgroupPopulated(events) {
			return nil
		}
		if err := waitReadable(ctx, f); err != nil {
			return err
		}
		for {
			if _, err := unix.Read(fd, buf); err != nil {
				break // drained (EAGAIN)
			}
		}
	}
}

// cgroupPopulated reads the "populated" key of a cgroup.events file. A
// file that cannot be read (the cgroup is gone) is not populated.
func cgroupPopulated(events string) bool {
	b, err := os.ReadFile(events)
	if err != nil {
		return false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("populated ")); ok {
			return string(v) != "0"
		}
	}
	return false
}

// waitReadable blocks in Go's poller until f is readable or ctx ends.
func waitReadable(ctx context.Context, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("procregistry: %s: %w", f.Name(), err)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err == nil && n > 0 || ctx.Err() != nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("procregistry: wait for %s: %w", f.Name(), err)
	}
	return nil
}
