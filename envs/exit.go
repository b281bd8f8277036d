package envs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Exit codes that runbox assigns by convention.
const (
	ExitTimeout     = 124 // the command's timeout expired
	ExitCannotEnter = 126 // the working directory cannot be entered (or the command cannot be executed)
	ExitNotFound    = 127 // the command was not found
	ExitSignalBase  = 128 // killed by signal n: 128+n
	ExitInterrupted = 130 // the caller's context was cancelled
)

// ExitStatus says how a command ended. Code is always set; the booleans and
// Signal say which convention, if any, produced it.
type ExitStatus struct {
	// Code is the exit code, 0–255.
	Code int `json:"exit_code"`
	// Signal is the signal that killed the command, 0 if it exited by itself.
	Signal syscall.Signal `json:"signal,omitempty"`
	// TimedOut is true when the command's timeout expired (Code 124).
	TimedOut bool `json:"timed_out"`
	// Interrupted is true when the caller's context was cancelled (Code 130).
	Interrupted bool `json:"interrupted"`
	// KilledBy names what killed the command when it was not a plain exit
	// (one of the KilledBy… causes). Empty for a normal exit.
	KilledBy KillCause `json:"killed_by,omitempty"`
	// LeftoverKilled counts the processes the command left running when it
	// exited (background children it did not wait for) that were killed
	// with it. Work meant to outlive a command belongs in a background
	// job. Zero where the backend does not count them.
	LeftoverKilled int `json:"leftover_killed,omitempty"`
}

// Success reports whether the command exited with status 0.
func (s ExitStatus) Success() bool { return s.Code == 0 }

// Err returns nil for a successful status and an [*ExitError] otherwise.
func (s ExitStatus) Err() error {
	if s.Success() {
		return nil
	}
	return &ExitError{Code: s.Code, Signal: s.Signal, TimedOut: s.TimedOut, Interrupted: s.Interrupted, KilledBy: s.KilledBy}
}

// StatusFromContext maps the end of ctx to a status: a deadline becomes 124
// (timed out), a cancellation 130 (interrupted). It returns false while ctx is
// still live.
func StatusFromContext(ctx context.Context) (ExitStatus, bool) {
	err := ctx.Err()
	if err == nil {
		return ExitStatus{}, false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), ErrTimeout) {
		return ExitStatus{Code: ExitTimeout, TimedOut: true, KilledBy: KilledByTimeout}, true
	}
	return ExitStatus{Code: ExitInterrupted, Interrupted: true, KilledBy: KilledByInterrupt}, true
}

// SignalStatus is the status of a command killed by sig.
func SignalStatus(sig syscall.Signal) ExitStatus {
	return ExitStatus{Code: ExitSignalBase + int(sig), Signal: sig, KilledBy: KilledBySignal}
}

// KillCause is what killed a command that did not exit by itself. It is a
// closed set; the JSON form is the string.
type KillCause string

// The causes a backend reports in ExitStatus.KilledBy.
const (
	KilledByTimeout     KillCause = "timeout"      // its timeout expired (exit 124)
	KilledByInterrupt   KillCause = "interrupt"    // the caller cancelled (exit 130)
	KilledBySignal      KillCause = "signal"       // a signal from outside runbox's teardown
	KilledByMemoryLimit KillCause = "memory-limit" // its container's memory limit
	KilledByPidsLimit   KillCause = "pids-limit"   // its container's task limit
)

// ExitError is a non-zero exit as an error, for callers that want one
// (the CLI turns it into its own exit status with errors.As).
type ExitError struct {
	Code        int
	Signal      syscall.Signal
	TimedOut    bool
	Interrupted bool
	KilledBy    KillCause
}

func (e *ExitError) Error() string {
	switch {
	case e.TimedOut:
		return fmt.Sprintf("envs: command timed out (exit %d)", e.Code)
	case e.Interrupted:
		return fmt.Sprintf("envs: command interrupted (exit %d)", e.Code)
	case e.KilledBy != "" && e.KilledBy != KilledBySignal:
		return fmt.Sprintf("envs: command killed by %s (exit %d)", e.KilledBy, e.Code)
	case e.Signal != 0:
		return fmt.Sprintf("envs: command killed by signal %d (%v)", int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("envs: command exited with status %d", e.Code)
}
