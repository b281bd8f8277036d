package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
)

const testImage = "runbox-test-debian:bookworm"

// agentBin is the static runbox-agent built once by TestMain ("" if the
// build failed; agentErr says why).
var agentBin, agentErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runbox-workspace-test-*")
	if err == nil {
		agentBin = filepath.Join(dir, "runbox-agent")
		if agentErr = testproc.BuildAgent(agentBin); agentErr != nil {
			agentBin = ""
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// sandbox opens an ephemeral container of the test image, or skips when
// no engine answers or the image is missing.
func sandbox(t testing.TB) *docker.Env {
	t.Helper()
	cli, err := docker.NewClient()
	if err != nil {
		integration.Skip(t, "no docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		integration.Skip(t, "no docker engine answers (run scripts/docker/start-dockerd.sh): %v", err)
	}
	if _, err := cli.ImageInspect(ctx, testImage); err != nil {
		integration.Skip(t, "image %s missing (run scripts/docker/build-images.sh): %v", testImage, err)
	}
	if agentBin == "" {
		t.Fatalf("%v", agentErr)
	}
	env, err := docker.New(ctx, docker.Options{Image: testImage, AgentBinary: agentBin, StopTimeout: time.Second})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

// sh runs shell code in env and fails the test unless it exits 0.
func sh(t *testing.T, env envs.Environment, code string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: code})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		out := ""
		if res != nil {
			out = res.Output
		}
		t.Fatalf("sandbox: %q: %v\n%s", code, err, out)
	}
	return res.Output
}
