package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/runbox/runbox/envs"
)

// The helpers below are the part of a native environment ([NativeExec])
// that does not depend on the backend's API: where a command's output
// goes, how a timeout or a cancelled context ends the command, and what
// an exec that runs each command on its own lacks. What differs — how a
// command is started, stopped and its exit status read — stays the
// backend's.

// RunOnly, embedded in a native environment, is what an exec that runs
// each command to its end on its own, and nothing more, does not have:
// streaming processes ([RunOnly.Start] refuses them), anything to
// release ([RunOnly.Close]), and the capabilities [RunOnly.Lacks] lists.
type RunOnly struct {
	// Name names the backend at the start of errors ("docker").
	Name string
	// How says how commands run ("exec API"), at the start of the
	// capability details.
	How string
}

// Start refuses: a process that streams needs the agent.
func (r RunOnly) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	return nil, fmt.Errorf("%s: streaming processes need the agent: %w", r.Name, envs.ErrUnsupported)
}

// Close has nothing to do: every command's resources went with its run.
func (r RunOnly) Close(ctx context.Context) error { return nil }

// Lacks is what such an exec cannot give, whatever its API: session state
// (each command starts fresh), a terminal, and output kept anywhere but
// in the client. The backend lays what its API does give over it.
func (r RunOnly) Lacks() envs.Capabilities {
	return envs.Capabilities{
		envs.CapDurableOutput: {State: envs.Unsupported, Detail: r.How + ": output lives only in the client"},
		envs.CapSessionState:  {State: envs.Unsupported, Detail: r.How + ": each command starts fresh"},
		envs.CapPTY:           {State: envs.Unsupported, Detail: r.How + " fallback"},
	}
}

// NativeOutput returns the captures a native exec fills with cmd's output:
// one for both streams, so their arrival order is kept, or, when
// cmd.SeparateStreams is set, errc is a second one for stderr. Both are
// bounded by cmd.Limit() and spill where [envs.NewCapture] puts spills;
// [envs.Result.TakeOutput] takes them when the command has ended.
func NativeOutput(cmd envs.Command) (out, errc *envs.Capture) {
	out = envs.NewCapture(cmd.Limit(), "")
	errc = out
	if cmd.SeparateStreams {
		errc = envs.NewCapture(cmd.Limit(), "")
	}
	return out, errc
}

// AwaitNative waits for a command a native exec has started. wait blocks
// until the command has ended as the native exec sees it (its output
// stream closed, its session over); AwaitNative runs it in a goroutine of
// its own and returns only after wait has returned.
//
// When ctx ends, or timeout (> 0) passes, before wait returns, stop is
// called with the status the command is reported with: 124 and TimedOut
// for the timeout or a deadline of ctx, 130 and Interrupted for a
// cancelled ctx. stop must end the command and make wait return. Then
// stopped is true, st is that status, and wait's error is dropped: the
// stop caused it. Otherwise stopped is false and err is wait's.
func AwaitNative(ctx context.Context, timeout time.Duration, wait func() error, stop func(envs.ExitStatus)) (st envs.ExitStatus, stopped bool, err error) {
	done := make(chan error, 1)
	go func() { done <- wait() }() // joined below on every path
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeoutCause(ctx, timeout, envs.ErrTimeout)
		defer cancel()
	}
	select {
	case err := <-done:
		return envs.ExitStatus{}, false, err
	case <-rctx.Done():
	}
	st, _ = envs.StatusFromContext(rctx)
	if ctx.Err() == nil { // only the timeout ended rctx
		st = envs.ExitStatus{Code: envs.ExitTimeout, TimedOut: true, KilledBy: envs.KilledByTimeout}
	}
	stop(st)
	<-done
	return st, true, nil
}
