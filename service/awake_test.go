package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/daytona/daytonatest"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// TestKeepAwake_Daytona: Daytona stops a sandbox after its auto-stop
// interval without a call, whatever runs in it (the fake's clock, started
// once the sandbox is set up, runs a minute in 300 ms). A session job is stopped with its sandbox while the
// agent waits (the control: the clock is real); a keep-awake job turns
// the auto-stop off while it runs, finishes, and the interval comes back
// after it, so the idle sandbox is stopped again. What would break: a
// keep-awake that only spares the session (the MCP idle reaper) but not
// the sandbox, or one that leaves the sandbox awake for good.
func TestKeepAwake_Daytona(t *testing.T) {
	t.Parallel()
	svc, fd := newFakeSandboxes(t).daytona(t, service.Options{AwakePoll: 200 * time.Millisecond})
	marks := t.TempDir()

	run := func(t *testing.T, l procregistry.Lifetime, seconds int) (finished string) {
		t.Helper()
		s := sandboxSession(svc, "daytona", envs.Spec{})(t)
		t.Cleanup(func() { s.Session.Close(context.Background()) })
		finished = filepath.Join(marks, string(l))
		in, err := s.Jobs.Start(t.Context(), procregistry.StartRequest{
			Shell: "sleep " + strconv.Itoa(seconds) + " && echo done > " + finished, Lifetime: l})
		if err != nil {
			t.Fatal(err)
		}
		if in.Warning != "" {
			t.Errorf("start warning: %s", in.Warning)
		}
		// The sandbox is set up: its clock runs from here.
		fd.RunAutoStop(300 * time.Millisecond)
		t.Cleanup(fd.StopAutoStop)
		return finished
	}
	// The subtests run one after the other, each with the only sandbox.
	box := func() daytonatest.Sandbox {
		boxes := fd.Sandboxes()
		if len(boxes) != 1 {
			t.Fatalf("want one sandbox, have %+v", boxes)
		}
		return boxes[0]
	}

	t.Run("control: a session job is stopped with its sandbox", func(t *testing.T) {
		finished := run(t, procregistry.LifetimeSession, 60)
		testwait.Until(t, "the idle sandbox to be stopped", func() bool { return box().AutoStops > 0 })
		if done(finished) {
			t.Fatal("the job finished before its sandbox was stopped: the control proves nothing")
		}
		fd.Delete(box().ID)
	})
	t.Run("keep-awake", func(t *testing.T) {
		finished := run(t, procregistry.LifetimeKeepAwake, 10)
		if iv := box().AutoStop; iv == nil || *iv != 0 {
			t.Fatalf("auto-stop while a keep-awake job runs = %v; want 0 (off)", iv)
		}
		testwait.Until(t, "the keep-awake job to finish", func() bool {
			return done(finished) || box().AutoStops > 0
		})
		if n := box().AutoStops; n != 0 {
			t.Fatalf("the sandbox was stopped %d times while a keep-awake job ran", n)
		}
		testwait.Until(t, "the auto-stop interval to come back", func() bool {
			iv := box().AutoStop
			return iv != nil && *iv == 15
		})
		testwait.Until(t, "the idle sandbox to be stopped again", func() bool { return box().AutoStops > 0 })
	})
}

// done reports whether the job that writes finished got that far.
func done(finished string) bool {
	b, _ := os.ReadFile(finished)
	return string(b) == "done\n"
}

// TestKeepAwake_ModalSaysItsTimeout: a Modal sandbox's timeout is a
// maximum lifetime that nothing extends, so a keep-awake job there starts
// with a warning that names it, and a session job without one.
func TestKeepAwake_ModalSaysItsTimeout(t *testing.T) {
	// Not parallel: the SDK reads its server from the process environment.
	cfg := config.Default()
	cfg.Modal.Timeout = config.Duration(20 * time.Minute)
	svc := newFakeSandboxes(t).modal(t, cfg)
	s := sandboxSession(svc, "modal", envs.Spec{})(t)
	t.Cleanup(func() { s.Session.Close(context.Background()) })
	for _, c := range []struct {
		lifetime procregistry.Lifetime
		warn     bool
	}{{procregistry.LifetimeSession, false}, {procregistry.LifetimeKeepAwake, true}} {
		in, err := s.Jobs.Start(t.Context(), procregistry.StartRequest{Shell: "sleep 600", Lifetime: c.lifetime})
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(in.Warning, "timeout (20m0s")
		if said != c.warn {
			t.Errorf("%s job: warning %q; want one naming the sandbox's timeout: %v", c.lifetime, in.Warning, c.warn)
		}
	}
}
