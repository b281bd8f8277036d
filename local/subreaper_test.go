package local_test

import (
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/local"
)

// TestSubreaper_LeftoversKilledAndCounted protects the promise that,
// without a cgroup, a background child that called setsid is still killed
// when its command ends, that the command's own status is kept, and that
// the result says how many processes were left and killed.
func TestSubreaper_LeftoversKilledAndCounted(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off(), NoContainment: true, Subreaper: subreaperArgv(t)})
	res := run(t, env, envs.Command{Shell: "( setsid sleep 1000.4711 & ); ( sleep 1001.4711 & ); echo $$ > /dev/null; exit 3"})
	if res.Code != 3 || res.TimedOut {
		t.Fatalf("exit %d timedOut %v; want 3: %s", res.Code, res.TimedOut, res.Output)
	}
	if res.LeftoverKilled != 2 {
		t.Errorf("LeftoverKilled = %d; want 2", res.LeftoverKilled)
	}
	res = run(t, env, envs.Command{Shell: `pgrep -af 'sleep 100[01].4711' | grep -v pgrep || echo none`})
	if got := strings.TrimSpace(res.Output); got != "none" {
		t.Errorf("leftovers still running: %s", got)
	}
	caps := env.Capabilities()
	if caps.State(envs.CapTreeKill) != envs.Active {
		t.Errorf("tree kill with a subreaper = %v; want active", caps[envs.CapTreeKill])
	}
}

// TestSubreaper_SignalStatusKept: a command killed by a signal is reported
// as killed by that signal, not as the subreaper's own exit.
func TestSubreaper_SignalStatusKept(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off(), NoContainment: true, Subreaper: subreaperArgv(t)})
	res := run(t, env, envs.Command{Shell: "kill -KILL $$"})
	if res.Signal != 9 || res.Code != 137 {
		t.Errorf("status = code %d signal %d; want 137 / 9", res.Code, res.Signal)
	}
}

// TestContainer_LeftoversKilledAndCounted: in a container (a cgroup or
// systemd scope), what a command leaves running is killed when it exits
// and counted, as under the subreaper; KeepLeftovers leaves it to Close.
func TestContainer_LeftoversKilledAndCounted(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off()})
	if env.Capabilities().State(envs.CapContainment) != envs.Active {
		integration.Skip(t, "no cgroup or scope here: %s", env.Capabilities()[envs.CapContainment].Detail)
	}
	res := run(t, env, envs.Command{Shell: "( setsid sleep 1000.4712 & ); sleep 1001.4712 & exit 4"})
	if res.Code != 4 || res.LeftoverKilled != 2 {
		t.Errorf("exit %d, LeftoverKilled %d; want 4 and 2", res.Code, res.LeftoverKilled)
	}
	res = run(t, env, envs.Command{Shell: `pgrep -af 'sleep 100[01].4712' | grep -v pgrep || echo none`})
	if got := strings.TrimSpace(res.Output); got != "none" {
		t.Errorf("leftovers still running: %s", got)
	}
	keep := open(t, local.Options{Confine: confine.Off(), KeepLeftovers: true})
	res = run(t, keep, envs.Command{Shell: "sleep 1002.4712 & exit 0"})
	if res.LeftoverKilled != 0 {
		t.Errorf("KeepLeftovers: LeftoverKilled %d; want 0", res.LeftoverKilled)
	}
	res = run(t, keep, envs.Command{Shell: `pgrep -af 'sleep 1002.4712' | grep -v pgrep | wc -l`})
	if strings.TrimSpace(res.Output) != "1" {
		t.Errorf("KeepLeftovers: the background child is gone before Close: %q", res.Output)
	}
}
