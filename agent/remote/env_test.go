package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/testwait"
)

// agentBin is the runbox-agent build the tests deploy, found (built from
// this source tree) by TestMain the way a backend finds it.
var agentBin string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	bin, err := remote.Agent().Find(ctx, runtime.GOARCH, "")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "find the agent:", err)
		os.Exit(1)
	}
	agentBin = bin
	goleak.VerifyTestMain(m)
}

const hang = 60 * time.Second

// open makes an Env over a fresh dirSandbox; cleanup closes it and kills
// whatever the sandbox still runs.
func open(t *testing.T, sb remote.Sandbox, opts remote.Options) *remote.Env {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "dir"
	}
	if opts.AgentBinary == "" {
		opts.AgentBinary = agentBin
	}
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	env, err := remote.New(ctx, sb, opts)
	if err != nil {
		t.Fatalf("remote.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func newSandbox(t *testing.T) *dirSandbox {
	sb := newDirSandbox(t.TempDir())
	t.Cleanup(sb.closeAll)
	return sb
}

func mustRun(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

// TestConformance runs the contract suite through the host: a sandbox,
// the deployed runbox-agent, its stream. What local guarantees must hold
// there.
func TestConformance(t *testing.T) {
	envtest.Run(t, func(t *testing.T) envs.Environment {
		env := open(t, newSandbox(t), remote.Options{})
		if fb := env.Fallback(); fb != "" {
			t.Fatalf("agent not used: %s", fb)
		}
		return env
	})
}

// TestEnv_AgentKilledRecreates protects loss detection and recreation:
// when the agent dies mid-command, the command fails at once with an error
// that says what became of the sandbox; the next command reconnects (same
// sandbox, fresh session) and says so, once.
func TestEnv_AgentKilledRecreates(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{})
	mustRun(t, env, "mkdir sub && cd sub")
	if res := mustRun(t, env, "pwd"); !strings.HasSuffix(res.Output, "/sub\n") {
		t.Fatalf("session state before the loss: pwd = %q", res.Output)
	}
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	p, err := env.Start(ctx, envs.Command{Shell: "echo started; sleep 60"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	out := bufio.NewReader(p.Output())
	if line, err := out.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	go io.Copy(io.Discard, out) // ends with the stream
	id := env.ID()
	start := time.Now()
	for _, c := range sb.agents() {
		c.Process.Kill()
	}
	_, err = p.Wait(ctx)
	if !errors.Is(err, agent.ErrLost) || !errors.Is(err, envs.ErrClosed) {
		t.Fatalf("Wait after the agent died = %v; want ErrLost", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v", d)
	}
	// The client saw the loss: the next command reconnects to the same
	// sandbox, in a fresh session (back in the sandbox's directory).
	res := mustRun(t, env, "pwd")
	if !res.EnvironmentRecreated || res.Output != id+"\n" {
		t.Errorf("first command after the loss: %q recreated=%v; want %q and true", res.Output, res.EnvironmentRecreated, id)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "session state") {
		t.Errorf("no warning that session state was reset: %q", res.Warnings)
	}
	if env.ID() != id {
		t.Errorf("the sandbox still exists but a new one was provisioned: %s, was %s", env.ID(), id)
	}
	if res := mustRun(t, env, "true"); res.EnvironmentRecreated {
		t.Errorf("EnvironmentRecreated reported twice")
	}
}

// TestEnv_SandboxGoneRecreates: a sandbox removed from outside is
// provisioned anew by the next command, which reports it with a warning.
func TestEnv_SandboxGoneRecreates(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{})
	old := env.ID()
	sb.kill(old)
	os.RemoveAll(old)
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: "echo hi"})
	if err != nil {
		if !strings.Contains(err.Error(), "is gone (removed)") || !strings.Contains(err.Error(), "the next command recreates") {
			t.Fatalf("Run in a removed sandbox = %v; want an error saying it is gone", err)
		}
		res, err = env.Run(ctx, envs.Command{Shell: "echo hi"})
	}
	if err != nil || !res.EnvironmentRecreated || res.Output != "hi\n" || env.ID() == old {
		t.Fatalf("after the sandbox was removed: %+v, %v (id %s, was %s); want a new sandbox", res, err, env.ID(), old)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "recreated") {
		t.Errorf("no warning about the recreation: %q", res.Warnings)
	}
}

// TestEnv_FallbackIsVisible: when the agent cannot run, commands go
// through the native exec, and the environment says so everywhere: in
// Fallback, in every result's warnings and in the capabilities, which are
// the native exec's own (no agent marking).
func TestEnv_FallbackIsVisible(t *testing.T) {
	cases := []struct {
		name string
		opts remote.Options
		why  string
	}{
		{"unusable-binary", remote.Options{AgentBinary: "/proc/self/status"}, "agent"},
		{"no-agent", remote.Options{NoAgent: true}, "NoAgent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := nativeDirSandbox{newSandbox(t)}
			env := open(t, sb, c.opts)
			if fb := env.Fallback(); !strings.Contains(fb, c.why) {
				t.Fatalf("Fallback() = %q; want the reason (%s)", fb, c.why)
			}
			res := mustRun(t, env, "echo via-native")
			if res.Output != "via-native\n" || !strings.Contains(strings.Join(res.Warnings, "\n"), "degraded") {
				t.Errorf("fallback result %q, warnings %q; want the output and a degraded warning", res.Output, res.Warnings)
			}
			caps := env.Capabilities()
			if d := caps[envs.CapDurableOutput].Detail; strings.Contains(d, "inside the sandbox") {
				t.Errorf("fallback reports the agent's durable output: %q", d)
			}
			if caps[envs.CapContainment].Detail != "a directory on this machine" {
				t.Errorf("the sandbox's own capabilities are not laid over the fallback's: %+v", caps[envs.CapContainment])
			}
			if copies, _ := sb.counts(); c.opts.NoAgent && copies != 0 {
				t.Errorf("NoAgent still copied %d file(s) into the sandbox", copies)
			}
		})
	}
}

// TestNew_NoAgentNoNativeReleases: when the agent cannot run and the
// sandbox has no native exec, New fails saying why, and releases the
// sandbox it provisioned: a failed start leaves nothing behind.
func TestNew_NoAgentNoNativeReleases(t *testing.T) {
	sb := newSandbox(t)
	_, err := remote.New(t.Context(), sb, remote.Options{Name: "dir", AgentBinary: "/proc/self/status"})
	if !errors.Is(err, envs.ErrUnsupported) || !strings.Contains(err.Error(), "/proc/self/status") {
		t.Fatalf("New = %v; want ErrUnsupported naming the unusable agent", err)
	}
	if _, releases := sb.counts(); releases != 1 {
		t.Errorf("sandbox released %d times after the failed start; want 1", releases)
	}
	if ents, _ := os.ReadDir(sb.parent); len(ents) != 0 {
		t.Errorf("left behind after the failed start: %v", ents)
	}
}

// TestEnv_ReusedSandboxKeepsItsAgent: a sandbox provisioned again keeps
// the agent copy it has when it is the same build (named by digest), so
// reconnecting costs no copy.
func TestEnv_ReusedSandboxKeepsItsAgent(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{})
	before, _ := sb.counts()
	for _, c := range sb.agents() {
		c.Process.Kill()
	}
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	if _, err := env.Run(ctx, envs.Command{Shell: "true"}); err != nil {
		mustRun(t, env, "true")
	}
	if after, _ := sb.counts(); after != before {
		t.Errorf("reconnecting copied the agent again (%d copies, was %d)", after, before)
	}
}

// TestEnv_Closed: after Close every call fails with ErrClosed, and the
// sandbox was released exactly once.
func TestEnv_Closed(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{})
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	env.Close(t.Context())
	if _, err := env.Run(t.Context(), envs.Command{Shell: "true"}); !errors.Is(err, envs.ErrClosed) {
		t.Errorf("Run after Close = %v; want ErrClosed", err)
	}
	if err := env.PutFile(t.Context(), "/x", strings.NewReader("x"), 0o600); !errors.Is(err, envs.ErrClosed) {
		t.Errorf("PutFile after Close = %v; want ErrClosed", err)
	}
	if _, releases := sb.counts(); releases != 1 {
		t.Errorf("released %d times; want 1", releases)
	}
}

// TestEnv_ConcurrentUseAcrossLosses drives the environment from several
// goroutines while its agent is killed again and again (run it with
// -race): every call either succeeds or fails with a lost or closed
// error, and Close in the middle of it all returns.
func TestEnv_ConcurrentUseAcrossLosses(t *testing.T) {
	sb := newSandbox(t)
	env := open(t, sb, remote.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := env.Run(ctx, envs.Command{Shell: "echo x"}); err != nil && !errors.Is(err, agent.ErrLost) && !errors.Is(err, envs.ErrClosed) {
					errc <- err
					return
				}
				if p, err := env.Start(ctx, envs.Command{Shell: "true"}); err == nil {
					io.Copy(io.Discard, p.Output())
					p.Wait(ctx)
				}
				env.Capabilities()
				env.Fallback()
			}
		})
	}
	for range 3 {
		testwait.Within(t, hang, "the agent is up again", func() bool { return len(sb.agents()) > 0 })
		for _, c := range sb.agents() {
			c.Process.Kill()
		}
		mustRunEventually(t, env)
	}
	env.Close(ctx)
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("call failed with neither a lost nor a closed error: %v", err)
	}
}

// mustRunEventually runs commands until one succeeds (the first after a
// loss may report it).
func mustRunEventually(t *testing.T, env envs.Environment) {
	t.Helper()
	testwait.Within(t, hang, "a command succeeds after the loss", func() bool {
		_, err := env.Run(t.Context(), envs.Command{Shell: "true"})
		return err == nil
	})
}
