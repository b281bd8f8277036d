package agentd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/cmd/internal/agentd"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
