package termination

import (
	"errors"
	"fmt"
	"syscall"
)

// killChecked checks p's start time and then signals by PID. The window
// between the two is tiny but not zero; it is used only where pidfds are
// unavailable.
func killChecked(p Proc, sig syscall.Signal) error {
	if err := p.check(); err != nil {
		return err
	}
	if err := syscall.Kill(p.PID, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("termination: pid %d: %w", p.PID, ErrGone)
		}
		return fmt.Errorf("termination: signal %v to pid %d: %w", sig, p.PID, err)
	}
	return nil
}
