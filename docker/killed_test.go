package docker_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// startedFIFO makes a host directory, to be the container's /workspace,
// holding a FIFO named "started", and returns it with a function that
// waits (bounded) for a command in the container to write a line to
// /workspace/started: the event that says the command runs.
func startedFIFO(t *testing.T) (dir string, wait func()) {
	t.Helper()
	dir = t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// Opened read-write, the FIFO does not block the open, and the
	// runtime poller gives its reads a deadline.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open fifo: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return dir, func() {
		t.Helper()
		f.SetReadDeadline(time.Now().Add(60 * time.Second))
		if line, err := bufio.NewReader(f).ReadString('\n'); err != nil || line != "started\n" {
			t.Fatalf("waiting for the command to start: %q, %v", line, err)
		}
	}
}

// TestEnv_KilledContainerReportedAsKilled kills, stops or removes the
// container from outside while a one-shot Run is in it. The Run must fail
// with an error that matches envs.ErrSandboxKilled and carries what the
// engine recorded (signal, exit code, removal), not one that calls the
// container running with a dead agent; the next command recreates it.
// Breaks if the container's state is read before the engine has recorded
// the kill.
func TestEnv_KilledContainerReportedAsKilled(t *testing.T) {
	stopTimeout := 10
	for _, tc := range []struct {
		name string
		kill func(ctx context.Context, cli *client.Client, id string) error
		want docker.KilledError // Container is filled in
	}{
		{"docker kill", func(ctx context.Context, cli *client.Client, id string) error {
			return cli.ContainerKill(ctx, id, "KILL")
		}, docker.KilledError{Status: "exited", ExitCode: 137, Signal: 9}},
		{"docker stop", func(ctx context.Context, cli *client.Client, id string) error {
			return cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &stopTimeout})
		}, docker.KilledError{Status: "exited", ExitCode: 143, Signal: 15}},
		{"docker rm -f", func(ctx context.Context, cli *client.Client, id string) error {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}, docker.KilledError{Removed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := engine(t, debianImage)
			dir, started := startedFIFO(t)
			env := open(t, docker.Options{Image: debianImage, Workspace: dir})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			id := env.ContainerID()
			errc := make(chan error, 1)
			go func() {
				_, err := env.Run(ctx, envs.Command{Shell: "echo started >/workspace/started; sleep 120"})
				errc <- err
			}()
			started()
			if err := tc.kill(ctx, cli, id); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			err := <-errc
			t.Logf("Run error: %v", err)
			want := tc.want
			want.Container = id[:12]
			assertKilled(t, err, want)
			if !errors.Is(err, envs.ErrClosed) {
				t.Errorf("Run error does not say the agent's stream was lost (envs.ErrClosed)")
			}
			res := mustRun(t, env, "echo back")
			if !res.EnvironmentRecreated || res.Output != "back\n" {
				t.Errorf("next Run: recreated=%v output=%q; want true, back", res.EnvironmentRecreated, res.Output)
			}
		})
	}
}

// assertKilled checks that err matches envs.ErrSandboxKilled and holds
// the *docker.KilledError want, and that its text says so.
func assertKilled(t *testing.T, err error, want docker.KilledError) {
	t.Helper()
	var k *docker.KilledError
	if !errors.Is(err, envs.ErrSandboxKilled) || !errors.As(err, &k) {
		t.Fatalf("error = %v; want one matching envs.ErrSandboxKilled with a *docker.KilledError", err)
	}
	if *k != want {
		t.Errorf("KilledError = %+v; want %+v", *k, want)
	}
	if strings.Contains(err.Error(), "agent died") {
		t.Errorf("error %q calls the killed container running with a dead agent", err)
	}
	word := map[bool]string{true: "was removed", false: "was killed"}[want.Removed]
	if want.OOMKilled {
		word = "OOM-killed"
	}
	if !strings.Contains(err.Error(), word) {
		t.Errorf("error %q does not say %q", err, word)
	}
}

// TestEnv_OOMKilledContainerReported: a command raises the OOM score of
// the container's init, then outgrows the container's memory limit, so
// the kernel's OOM killer ends the container itself. The command's error
// says the container was OOM-killed, with the exit code the engine
// recorded.
func TestEnv_OOMKilledContainerReported(t *testing.T) {
	engine(t, debianImage)
	env := open(t, docker.Options{Image: debianImage, Limits: envs.Limits{MemoryBytes: 64 << 20}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	id := env.ContainerID()
	res, err := env.Run(ctx, envs.Command{Shell: "echo 1000 >/proc/1/oom_score_adj && head -c 1G /dev/zero | tail -c 1G >/dev/null"})
	if err == nil {
		t.Fatalf("Run = %+v, no error; want the container OOM-killed", res)
	}
	t.Logf("Run error: %v", err)
	assertKilled(t, err, docker.KilledError{Container: id[:12], Status: "exited", ExitCode: 137, Signal: 9, OOMKilled: true})
}

// TestEnv_AgentDiedIsNotKilled is the control: when only the agent dies
// and the container runs on, the command's error says so and does not
// match envs.ErrSandboxKilled.
func TestEnv_AgentDiedIsNotKilled(t *testing.T) {
	cli := engine(t, debianImage)
	dir, started := startedFIFO(t)
	env := open(t, docker.Options{Image: debianImage, Workspace: dir})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := env.Run(ctx, envs.Command{Shell: "echo started >/workspace/started; sleep 120"})
		errc <- err
	}()
	started()
	// The quotes keep this script's own command line from matching.
	killAgent := `for d in /proc/[0-9]*; do case "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" in *runbox-"agent"*) kill -9 "${d#/proc/}";; esac; done`
	ex, err := cli.ContainerExecCreate(ctx, env.ContainerID(), container.ExecOptions{Cmd: []string{"/bin/sh", "-c", killAgent}})
	if err != nil {
		t.Fatalf("exec create: %v", err)
	}
	if err := cli.ContainerExecStart(ctx, ex.ID, container.ExecStartOptions{Detach: true}); err != nil {
		t.Fatalf("exec start: %v", err)
	}
	err = <-errc
	t.Logf("Run error: %v", err)
	if err == nil || errors.Is(err, envs.ErrSandboxKilled) || !strings.Contains(err.Error(), "running but its agent died") {
		t.Fatalf("Run error after the agent was killed = %v; want \"running but its agent died\", not ErrSandboxKilled", err)
	}
	if ci, err := cli.ContainerInspect(ctx, env.ContainerID()); err != nil || !ci.State.Running {
		t.Fatalf("the control killed more than the agent: container running=%v, %v", err == nil && ci.State.Running, err)
	}
}
