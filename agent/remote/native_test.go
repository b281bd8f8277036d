package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// blocked is a command that runs until stop ends it: its wait returns
// only then, with the error a killed session reports.
type blocked struct {
	stopped chan struct{}
	got     []envs.ExitStatus
}

var errKilled = errors.New("session ended by the kill")

func newBlocked() *blocked { return &blocked{stopped: make(chan struct{})} }

func (b *blocked) wait() error { <-b.stopped; return errKilled }

func (b *blocked) stop(st envs.ExitStatus) {
	b.got = append(b.got, st)
	close(b.stopped)
}

// A command that ends by itself is not stopped, and its wait's error is
// the caller's to read (ssh maps a session's exit error to a status).
func TestAwaitNative_EndsByItself(t *testing.T) {
	want := errors.New("exit status 3")
	st, stopped, err := remote.AwaitNative(t.Context(), time.Hour, func() error { return want }, func(envs.ExitStatus) {
		t.Error("stop called for a command that ended by itself")
	})
	if stopped || err != want || st != (envs.ExitStatus{}) {
		t.Fatalf("AwaitNative = %+v, %v, %v; want zero status, false, %v", st, stopped, err, want)
	}
}

// The timeout, a deadline of ctx and a cancelled ctx each stop the command
// once, with the status the contract gives them, and AwaitNative returns
// only after wait has: nothing of the command outlives the call.
func TestAwaitNative_StopStatus(t *testing.T) {
	timedOut := envs.ExitStatus{Code: envs.ExitTimeout, TimedOut: true, KilledBy: envs.KilledByTimeout}
	interrupted := envs.ExitStatus{Code: envs.ExitInterrupted, Interrupted: true, KilledBy: envs.KilledByInterrupt}
	cases := []struct {
		name    string
		ctx     func(t *testing.T) context.Context
		timeout time.Duration
		want    envs.ExitStatus
	}{
		{"timeout", func(t *testing.T) context.Context { return t.Context() }, time.Millisecond, timedOut},
		{"deadline", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, 0, timedOut},
		{"cancelled", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}, time.Hour, interrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBlocked()
			st, stopped, err := remote.AwaitNative(c.ctx(t), c.timeout, b.wait, b.stop)
			if !stopped || err != nil || st != c.want {
				t.Fatalf("AwaitNative = %+v, %v, %v; want %+v, true, nil", st, stopped, err, c.want)
			}
			if len(b.got) != 1 || b.got[0] != c.want {
				t.Fatalf("stop got %+v; want one call with %+v", b.got, c.want)
			}
		})
	}
}

// One capture keeps the streams' arrival order; SeparateStreams gives
// stderr its own, and TakeOutput puts each where the Result says.
func TestNativeOutput_Streams(t *testing.T) {
	out, errc := remote.NativeOutput(envs.Command{Shell: "true"})
	if out != errc {
		t.Fatal("NativeOutput without SeparateStreams: two captures; want one for both streams")
	}
	out.Write([]byte("a"))
	errc.Write([]byte("b"))
	var res envs.Result
	res.TakeOutput(out, errc)
	if res.Output != "ab" || res.Stderr != "" {
		t.Fatalf("merged: Output %q, Stderr %q; want \"ab\", \"\"", res.Output, res.Stderr)
	}

	out, errc = remote.NativeOutput(envs.Command{Shell: "true", SeparateStreams: true})
	out.Write([]byte("a"))
	errc.Write([]byte("b"))
	res = envs.Result{}
	res.TakeOutput(out, errc)
	if res.Output != "a" || res.Stderr != "b" {
		t.Fatalf("separate: Output %q, Stderr %q; want \"a\", \"b\"", res.Output, res.Stderr)
	}
}

// An exec that only runs commands says so: Start is refused as
// unsupported (the caller falls back or reports, never waits), and the
// capabilities it lacks are reported unsupported, never left out.
func TestRunOnly_SaysWhatItLacks(t *testing.T) {
	r := remote.RunOnly{Name: "box", How: "box exec"}
	if p, err := r.Start(t.Context(), envs.Command{Shell: "true"}); p != nil || !errors.Is(err, envs.ErrUnsupported) || !strings.HasPrefix(err.Error(), "box: ") {
		t.Fatalf("Start = %v, %v; want nil and a box: error matching ErrUnsupported", p, err)
	}
	caps := r.Lacks()
	for _, c := range []envs.Capability{envs.CapSessionState, envs.CapPTY, envs.CapDurableOutput} {
		if info := caps[c]; info.State != envs.Unsupported || !strings.HasPrefix(info.Detail, "box exec") {
			t.Errorf("Lacks()[%s] = %+v; want unsupported, detail naming box exec", c, info)
		}
	}
}
