package agentd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/agentd"
	"github.com/runbox/runbox/local"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLocalOptions_FromConfig protects the mapping from the sandbox's
// configuration to the local backend the agent serves: no subreaper ever
// (what a command starts to outlive it in a sandbox must not be torn down
// with it), grace 0 meaning SIGKILL at once, contain false meaning
// process groups only, the spawn lists laid over the default policy.
func TestLocalOptions_FromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Shell = "sh"
	cfg.Contain = false
	cfg.Grace = 0
	cfg.Limits.Pids = 64
	cfg.Spawn.Passthrough = []string{"GITHUB_TOKEN"}
	o := agentd.LocalOptions(cfg, []string{"A=1"}, nil)
	if o.Subreaper != nil || o.Shell != "sh" || !o.NoContainment || o.Grace != local.NoGrace || o.Limits.Pids != 64 {
		t.Errorf("LocalOptions = subreaper %v, shell %q, no containment %v, grace %v, pids %d; want nil, sh, true, NoGrace, 64",
			o.Subreaper, o.Shell, o.NoContainment, o.Grace, o.Limits.Pids)
	}
	if o.Spawn == nil || len(o.Spawn.Passthrough) == 0 || o.Spawn.Passthrough[len(o.Spawn.Passthrough)-1] != "GITHUB_TOKEN" {
		t.Errorf("spawn passthrough = %v; want the configured name added", o.Spawn)
	}
	if d := agentd.LocalOptions(config.Default(), nil, nil); d.NoContainment || d.Grace != 2*time.Second {
		t.Errorf("default config: no containment %v, grace %v; want false, 2s", d.NoContainment, d.Grace)
	}
}

// TestServe_ScrubsTheSandboxEnvironment serves over real pipes: commands
// get the sandbox's environment as their base, through spawn, so a
// secret the agent was started with never reaches them.
func TestServe_ScrubsTheSandboxEnvironment(t *testing.T) {
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Contain = false
	served := make(chan error, 1)
	go func() {
		served <- agentd.Serve(context.Background(), sr, sw, agentd.Options{
			Config:  cfg,
			Environ: []string{"PATH=/usr/bin:/bin", "RB_PLAIN=visible", "GITHUB_TOKEN=ghp_secret_4c1d"},
		})
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := agent.NewClient(ctx, agent.Stream(cr, cw), agent.ClientOptions{})
	if err != nil {
		t.Fatalf("NewClient: %v (Serve: %v)", err, <-served)
	}
	res, err := cl.Run(ctx, envs.Command{Shell: `printf '%s|%s' "$RB_PLAIN" "$GITHUB_TOKEN"`})
	if err != nil || res.Output != "visible|" {
		t.Errorf("Run = %+v, %v; want the plain variable and not the secret", res, err)
	}
	cl.Close(ctx)
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v; want nil once the client left", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after the client closed")
	}
}
