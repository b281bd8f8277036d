//go:build linux

package supervisor

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/termination"
)

// waitGone returns once p, a process that is not this one's child, has
// exited. It waits on a pidfd in Go's poller (no thread, no timer), or,
// on kernels without one, looks every second.
func waitGone(p termination.Proc) {
	fd, err := unix.PidfdOpen(p.PID, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		pollGone(p)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	// Checked after the open: the pidfd pins the process that had p's
	// start time, so a recycled PID cannot keep us waiting.
	if !p.Alive() {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		pollGone(p)
		return
	}
	rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err != nil || n > 0
	})
}

func pollGone(p termination.Proc) {
	for p.Alive() {
		time.Sleep(time.Second)
	}
}
