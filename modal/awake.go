package modal

import (
	"context"
	"fmt"
	"time"
)

// modalDefaultTimeout is the lifetime Modal gives a sandbox created
// without a timeout.
const modalDefaultTimeout = 5 * time.Minute

// KeepAwake cannot keep a Modal sandbox past its timeout, a maximum
// lifetime fixed at creation that nothing extends: turning it on says so
// (the caller puts it in the job's warning). Modal's idle timeout needs
// nothing: the runbox agent's exec stream is activity while the session
// lasts.
func (s *sandbox) KeepAwake(_ context.Context, on bool) error {
	if !on {
		return nil
	}
	t := s.opts.Timeout
	if t == 0 {
		t = modalDefaultTimeout
	}
	return fmt.Errorf("modal: the sandbox ends at its timeout (%s from its creation; modal.timeout), which nothing extends", t)
}
