package vercel_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/vercel"
	"github.com/runbox/runbox/vercel/verceltest"
)

// agentBin is the static runbox-agent built once by TestMain.
var agentBin string

func TestMain(m *testing.M) { os.Exit(testproc.AgentMain(m, &agentBin)) }

const (
	token   = "vcp_runbox-test-9f3c1a7e5b2d4c6e"
	team    = "team_runboxtest"
	project = "prj_runboxtest"
)

// hang bounds waits: far above any honest duration, it only turns a hang
// into a failure.
const hang = 90 * time.Second

func fake(t *testing.T) *verceltest.Server {
	t.Helper()
	srv, err := verceltest.Start(verceltest.Config{Token: token, TeamID: team, ProjectID: project, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// launchEnv is runbox's sealed launch environment as the service reads
// it.
func launchEnv(srv *verceltest.Server, extra map[string]string) func(string) string {
	m := map[string]string{"VERCEL_TOKEN": token, "VERCEL_TEAM_ID": team, "VERCEL_PROJECT_ID": project, "VERCEL_API_URL": srv.URL()}
	for k, v := range extra {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func options(t *testing.T, srv *verceltest.Server) vercel.Options {
	t.Helper()
	creds, err := vercel.CredentialsFrom(launchEnv(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	return vercel.Options{
		Credentials: creds,
		Runtime:     "node22",
		AgentBinary: agentBin,
		AgentDir:    filepath.Join(t.TempDir(), "agent"),
		Owner:       "tester",
	}
}

func open(t *testing.T, o vercel.Options) *vercel.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	env, err := vercel.New(ctx, o)
	if err != nil {
		t.Fatalf("vercel.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func run(t *testing.T, env envs.Environment, cmd envs.Command) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	res, err := env.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("run %q: %v", cmd.Shell, err)
	}
	return res
}

// TestEnv_Conformance runs the whole contract through the REST API and
// the interactive PTY of the fake, with the real agent behind them.
func TestEnv_Conformance(t *testing.T) {
	srv := fake(t)
	// One agent directory for all: the fake's sandboxes share this
	// machine's paths, so later sandboxes find the agent already there
	// (CopyIn keeps a same-sized file), as a resumed sandbox does.
	agentDir := filepath.Join(t.TempDir(), "agent")
	envtest.Run(t, func(t *testing.T) envs.Environment {
		o := options(t, srv)
		o.AgentDir = agentDir
		return open(t, o)
	})
}
