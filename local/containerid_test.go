package local_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// TestEnv_TwoEnvsDoNotShareContainers: the commands of two environments
// in one process run in containers of their own, so tearing down one
// command's tree never reaches the other's. It breaks when two
// environments name their commands' containers alike (each counts its
// commands from 1) and so put them in one cgroup, which the first
// teardown kills whole.
func TestEnv_TwoEnvsDoNotShareContainers(t *testing.T) {
	a := open(t, local.Options{Confine: confine.Off()})
	b := open(t, local.Options{Confine: confine.Off()})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 4 {
		pa := start(t, ctx, a, fmt.Sprintf("exec sleep 313%d", i))
		pb := start(t, ctx, b, fmt.Sprintf("exec sleep 314%d", i))
		ga, gb := cgroupOf(t, pa.PID()), cgroupOf(t, pb.PID())
		if ga != "" && ga == gb {
			t.Fatalf("round %d: both environments' commands are in cgroup %s", i, ga)
		}
		// Started is not yet exec'd: the command is a sleep once its
		// shell has run it, which a busy machine may take a while for.
		for liveWithArg(t, fmt.Sprintf("313%d", i)) != 1 {
			if ctx.Err() != nil {
				t.Fatalf("round %d: a's command never became its sleep", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := pb.Kill(ctx); err != nil {
			t.Fatalf("Kill b's command: %v", err)
		}
		pb.Wait(ctx)
		if n := liveWithArg(t, fmt.Sprintf("313%d", i)); n != 1 {
			t.Fatalf("round %d: %d of a's command live after b's was torn down; want 1", i, n)
		}
		pa.Kill(ctx)
		pa.Wait(ctx)
	}
}

func start(t *testing.T, ctx context.Context, env *local.Env, shell string) envs.Process {
	t.Helper()
	p, err := env.Start(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Start(%q): %v", shell, err)
	}
	t.Cleanup(func() { p.Kill(context.Background()) })
	return p
}

// cgroupOf is pid's cgroup in the cgroup2 hierarchy ("" for the root, or
// without one).
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if g, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok && g != "/" {
			return g
		}
	}
	return ""
}
