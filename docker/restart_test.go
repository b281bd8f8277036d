package docker_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// TestEnv_DaemonRestartMidCommand restarts the Docker engine while a
// command runs: the command must fail quickly with a clear error (never
// hang), and the next command must recreate the environment and say so.
//
// Restarting the engine would break every other test using it, so this
// runs only as its own serial step of scripts/test
// (RUNBOX_DOCKERD_RESTART=1), never inside the parallel `go test ./...`.
func TestEnv_DaemonRestartMidCommand(t *testing.T) {
	if os.Getenv("RUNBOX_DOCKERD_RESTART") != "1" {
		t.Skip("restarts the shared engine: runs as a serial step of scripts/test (RUNBOX_DOCKERD_RESTART=1)")
	}
	engine(t, debianImage)
	env := open(t, docker.Options{Image: debianImage})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p, err := env.Start(ctx, envs.Command{Shell: "echo started; sleep 300"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	line, err := bufio.NewReader(p.Output()).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	go io.Copy(io.Discard, p.Output()) // keep draining; ends with the stream

	stopDockerd(t)
	start := time.Now()
	waited := make(chan error, 1)
	go func() { _, err := p.Wait(ctx); waited <- err }()
	select {
	case err := <-waited:
		if err == nil {
			t.Fatalf("Wait returned no error after the engine stopped")
		}
		t.Logf("command failed after %v: %v", time.Since(start), err)
	case <-time.After(30 * time.Second):
		t.Fatalf("command still waiting 30s after the engine stopped")
	}

	out, err := exec.CommandContext(ctx, "../scripts/docker/start-dockerd.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("start-dockerd: %v\n%s", err, out)
	}
	res, err := env.Run(ctx, envs.Command{Shell: "echo back"})
	if err != nil {
		t.Fatalf("Run after the restart: %v", err)
	}
	if !res.EnvironmentRecreated || res.Output != "back\n" {
		t.Fatalf("after restart: recreated=%v output=%q; want true and back", res.EnvironmentRecreated, res.Output)
	}
}

// stopDockerd stops the running engine (SIGTERM, as a service manager
// would) and waits until it is gone.
func stopDockerd(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		t.Fatalf("no dockerd pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("dockerd pid file: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop dockerd %d: %v", pid, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("dockerd %d still running 60s after SIGTERM", pid)
		}
		time.Sleep(100 * time.Millisecond) // polling a pid that has no wait channel
	}
}
