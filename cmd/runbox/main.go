// Command runbox runs shell commands for AI agents in sandboxed execution
// environments. See the README for a tour; `runbox --help` lists commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/spawn"
)

// Exit statuses of runbox itself (a command's own status passes through).
const (
	exitUsage  = 2   // bad flags or arguments
	exitRunbox = 125 // runbox could not run the command (or the gate refused it)
	// exitPidsLimit: the command failed after its container refused it
	// more tasks (--pids). A failed fork leaves every program to pick its
	// own status, so runbox gives this one instead: sysexits' EX_OSERR,
	// "cannot fork".
	exitPidsLimit = 71
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == subreaper.Command {
		os.Exit(subreaper.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:]))
	}
	if len(os.Args) == 2 && os.Args[1] == "agent" {
		os.Exit(agentMain())
	}
	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	// A job's supervisor is not sealed: its environment is the job's own,
	// already built by spawn, and it must hand exactly that to the job.
	if len(os.Args) < 2 || os.Args[1] != "__supervise" {
		a.seal(seal.Process(spawn.DefaultPolicy()))
	}
	ctx, relay, stop := signalContext()
	a.signals = relay
	err := a.execute(ctx, os.Args[1:])
	stop()
	os.Exit(exitCode(err))
}

// signalContext cancels with a cause naming the signal, so main can
// report 128+n the way a shell would. SIGINT goes to the relay's taker
// instead while one has taken it (see [signalRelay.takeInterrupt]).
func signalContext() (context.Context, *signalRelay, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	relay := &signalRelay{}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case s := <-ch:
				sig := s.(syscall.Signal)
				if take := relay.taker(); sig == syscall.SIGINT && take != nil {
					take(sig)
					continue
				}
				cancel(signalError{sig})
				return
			case <-done:
				return
			}
		}
	})
	return ctx, relay, func() { signal.Stop(ch); close(done); wg.Wait(); cancel(nil) }
}

// signalRelay lets an interactive command take SIGINT over from runbox:
// while it has, a SIGINT sent to runbox is passed on to the command (as
// the terminal's own ^C is) instead of tearing the command down.
type signalRelay struct {
	mu   sync.Mutex
	take func(syscall.Signal)
}

// takeInterrupt sends SIGINT to f until release is called.
func (r *signalRelay) takeInterrupt(f func(syscall.Signal)) (release func()) {
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	r.take = f
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.take = nil
		r.mu.Unlock()
	}
}

func (r *signalRelay) taker() func(syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.take
}

type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return "runbox: received " + e.sig.String() }

// exitCode turns the error of a command into runbox's exit status: the
// command's own code, 128+n for a signal, 126 for a working directory
// that cannot be entered, 2 for usage, 125 otherwise.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *envs.ExitError
	if errors.As(err, &ee) {
		if ee.KilledBy == envs.KilledByPidsLimit {
			return exitPidsLimit
		}
		return ee.Code
	}
	var se signalError
	if errors.As(err, &se) {
		return 128 + int(se.sig)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var de *envs.DirError
	if errors.As(err, &de) {
		return envs.ExitCannotEnter
	}
	return exitRunbox
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func errorf(format string, args ...any) error { return fmt.Errorf("runbox: "+format, args...) }
