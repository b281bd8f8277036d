package undo

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// flock takes the exclusive lock on f, waiting until it is free or ctx
// is done. flock(2) cannot be interrupted by a context, so it is tried
// without blocking and retried after a growing pause.
func flock(ctx context.Context, f *os.File) error {
	pause := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func funlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// alive says whether the process that began a command still runs: the
// pid exists and, where the start time is known, it is the same process
// and not a later one that reused the number.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	if start == 0 {
		return true
	}
	now := procStart(pid)
	return now == 0 || now == start
}
