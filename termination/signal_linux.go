package termination

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalProc opens a pidfd for p.PID, checks the start time, and signals
// through the pidfd. A pidfd pins the process it was opened for: if the
// start time matches after the open, the signal cannot reach a recycled
// PID. Kernels without pidfd_open (before 5.3) fall back to check + kill.
func signalProc(p Proc, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("termination: pid %d: %w", p.PID, ErrGone)
	case errors.Is(err, unix.ENOSYS):
		return killChecked(p, sig)
	case err != nil:
		return fmt.Errorf("termination: pidfd_open %d: %w", p.PID, err)
	}
	defer unix.Close(fd)
	if err := p.check(); err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("termination: pid %d: %w", p.PID, ErrGone)
		}
		return fmt.Errorf("termination: signal %v to pid %d: %w", sig, p.PID, err)
	}
	return nil
}
