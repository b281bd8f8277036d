package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

const (
	debianImage  = "runbox-test-debian:bookworm" // has python3 (scripts/docker/build-images.sh)
	busyboxImage = "runbox-test-busybox:latest"  // has none
)

// testAgent builds the static agent the docker backend copies into its
// containers, once per test binary and only when a docker test runs.
type testAgent struct {
	once sync.Once
	dir  string // removed by TestMain
	path string
	err  error
}

var agent testAgent

func (a *testAgent) build(t *testing.T) string {
	t.Helper()
	a.once.Do(func() {
		dir, err := os.MkdirTemp("", "runbox-kernel-agent-*")
		if err != nil {
			a.err = err
			return
		}
		a.dir, a.path = dir, filepath.Join(dir, "runbox-agent")
		a.err = testproc.BuildAgent(a.path)
	})
	if a.err != nil {
		t.Fatalf("build the agent: %v", a.err)
	}
	return a.path
}

// dockerSession is a gated session on the docker backend in image, or a
// skip when no engine answers or the image is missing.
func dockerSession(t *testing.T, image string) *service.Session {
	t.Helper()
	if testing.Short() {
		t.Skip("docker: -short")
	}
	cli, err := docker.NewClient()
	if err != nil {
		integration.Skip(t, "no docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		integration.Skip(t, "no docker engine answers (scripts/docker/start-dockerd.sh): %v", err)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		integration.Skip(t, "image %s missing (scripts/docker/build-images.sh): %v", image, err)
	}
	cfg := config.Default()
	cfg.Docker.AgentBinary = agent.build(t)
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	ss, err := svc.NewSession(service.SessionOptions{Backend: "docker", Spec: envs.Spec{Image: image}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close(context.Background()) })
	return ss
}

// TestKernel_Docker: in the Debian image the kernel keeps its state, its
// tool calls run in the container through the gate, and a timeout
// interrupts without losing the namespace.
func TestKernel_Docker(t *testing.T) {
	ss := dockerSession(t, debianImage)
	// No host access: code runs without asking, even with nobody to ask.
	if err := ss.AuthorizeCode(t.Context(), "import os; os.system('rm -rf /tmp/x')"); err != nil {
		t.Errorf("AuthorizeCode in a container: %v; want nil", err)
	}
	k := newKernel(t, ss, kernel.Options{})
	mustOK(t, k, "x = 41")
	if r := mustOK(t, k, "print(x + 1)"); r.Stdout != "42\n" {
		t.Errorf("stdout = %q; want 42", r.Stdout)
	}
	// The code and its commands run in the same container, not here.
	host, _ := os.Hostname()
	r := mustOK(t, k, "import runbox, os\nres = runbox.terminal('cd /tmp && pwd && hostname')\n"+
		"print(res['output'] + os.uname().nodename)")
	lines := strings.Fields(r.Stdout)
	if len(lines) != 3 || lines[0] != "/tmp" || lines[1] != lines[2] || lines[1] == host {
		t.Errorf("tool call in the container printed %q; want /tmp and the container's hostname twice (not %s)", r.Stdout, host)
	}
	r = run(t, k, "runbox.terminal('rm -rf --no-preserve-root /')", 0)
	if r.Status != kernel.StatusError || r.EName != "Denied" {
		t.Errorf("hardline in the container: %+v; want Denied", r)
	}
	r = run(t, k, "while True:\n    x += 1", 300*time.Millisecond)
	if !r.TimedOut || r.StateLost || r.EName != "KeyboardInterrupt" {
		t.Errorf("timeout: %+v; want an interrupt with the state kept", r)
	}
	if r := mustOK(t, k, "x > 41"); r.Result == nil || *r.Result != "True" {
		t.Errorf("after the interrupt: %v; want True", r.Result)
	}
}

// TestKernel_DockerNoPython: the busybox image has no python3; the error
// says so at once instead of hanging.
func TestKernel_DockerNoPython(t *testing.T) {
	ss := dockerSession(t, busyboxImage)
	k := newKernel(t, ss, kernel.Options{StartTimeout: 60 * time.Second})
	start := time.Now()
	err := k.Start(t.Context())
	if !errors.Is(err, kernel.ErrNoInterpreter) || !strings.Contains(err.Error(), "python3") {
		t.Fatalf("Start = %v; want ErrNoInterpreter naming python3", err)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("the failure took %v", d)
	}
}
