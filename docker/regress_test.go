package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// TestEnv_ExecFallbackConcurrentRecreate protects the exec fallback's
// state (run it with -race): commands start and run from several
// goroutines while the container is removed from outside and recreated,
// and the fallback's state must not be read while the recreation rewrites
// it. It used to be: the fallback read the environment's fallback reason
// without the lock its recreation held to write it.
func TestEnv_ExecFallbackConcurrentRecreate(t *testing.T) {
	cli := engine(t, busyboxImage)
	env := open(t, docker.Options{Image: busyboxImage, NoAgent: true})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := env.Start(ctx, envs.Command{Shell: "true"})
				if !errors.Is(err, envs.ErrUnsupported) && !errors.Is(err, envs.ErrClosed) {
					errc <- fmt.Errorf("Start in the fallback = %v; want ErrUnsupported", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			env.Capabilities()
			env.Fallback()
		}
	})
	for round := range 8 {
		old := env.ContainerID()
		if err := cli.ContainerRemove(ctx, old, container.RemoveOptions{Force: true}); err != nil {
			t.Fatalf("docker rm: %v", err)
		}
		var res *envs.Result
		var err error
		for range 3 { // the first command may be the one that finds the loss
			if res, err = env.Run(ctx, envs.Command{Shell: "echo back"}); err == nil {
				break
			}
		}
		if err != nil || res.Output != "back\n" || env.ContainerID() == old {
			t.Fatalf("round %d: Run after docker rm = %+v, %v; want a recreated container", round, res, err)
		}
	}
	env.Close(ctx)
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestNew_FailedStartLeavesNoContainer protects against leaked
// containers: whatever stage a New fails at — the engine refusing to
// start the container, or ctx ending while the engine is still creating
// it — no container of the task is left when New returns.
func TestNew_FailedStartLeavesNoContainer(t *testing.T) {
	cli := engine(t, busyboxImage)
	left := func(task string) []string {
		t.Helper()
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelTask+"="+task))})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID[:12]+" "+c.State)
			cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
		return ids
	}
	stamp := time.Now().UnixNano()
	t.Run("StartRefused", func(t *testing.T) {
		for _, persistent := range []bool{false, true} {
			task := fmt.Sprintf("failed-start-%d-%v", stamp, persistent)
			_, err := docker.New(t.Context(), docker.Options{Image: busyboxImage, Task: task, Persistent: persistent, AgentBinary: agentBin, Network: "runbox-test-no-such-network"})
			if err == nil {
				t.Fatalf("New on a missing network succeeded")
			}
			if ids := left(task); len(ids) != 0 {
				t.Errorf("persistent=%v: containers left after the failed start: %v", persistent, ids)
			}
		}
	})
	t.Run("CtxEnds", func(t *testing.T) {
		failed := 0
		for i, d := range []time.Duration{5, 10, 15, 20, 30, 40, 60, 80, 120, 200} {
			task := fmt.Sprintf("cut-start-%d-%d", stamp, i)
			ctx, cancel := context.WithTimeout(t.Context(), d*time.Millisecond)
			env, err := docker.New(ctx, docker.Options{Image: busyboxImage, Task: task, AgentBinary: agentBin, ReapAge: -1})
			cancel()
			if err == nil {
				env.Close(context.Background())
				continue
			}
			failed++
			if ids := left(task); len(ids) != 0 {
				t.Errorf("ctx of %dms (%v): containers left: %v", d, err, ids)
			}
		}
		// A create the engine finished after New gave up on it would show
		// up late: look again for anything of these tasks.
		all, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelManaged+"=true"))})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, c := range all {
			if task := c.Labels[docker.LabelTask]; strings.HasPrefix(task, fmt.Sprintf("cut-start-%d-", stamp)) {
				t.Errorf("container %s of task %s appeared after New returned", c.ID[:12], task)
				cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
			}
		}
		if failed == 0 {
			t.Skip("every New beat its deadline; nothing was cut short")
		}
	})
}

// TestEnv_CLIOnDemand: the agent alone goes into a new container; the
// full runbox CLI follows only when a command runs it at CLIPath (the job
// commands do), and is then usable there. The CLI is built exactly as the
// README's quick start builds it, and that very binary then serves as the
// agent of another container, mounted from its volume: the README's build
// needs no other agent built or copied.
func TestEnv_CLIOnDemand(t *testing.T) {
	cli := engine(t, busyboxImage)
	cliBin := filepath.Join(t.TempDir(), "runbox")
	build := exec.Command("go", "build", "-o", cliBin, "github.com/runbox/runbox/cmd/runbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v: %s", err, out)
	}
	env := open(t, docker.Options{Image: busyboxImage, CLIBinary: cliBin})
	// The agent is in the container either as its mounted volume
	// (/.runbox/agent) or as a copy (/.runbox/runbox-agent-<digest>).
	res := mustRun(t, env, "ls /.runbox")
	if slices.Contains(strings.Fields(res.Output), "runbox") || !strings.Contains(res.Output, "agent") {
		t.Fatalf("a new container holds %q; want the agent alone", res.Output)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Args: []string{docker.CLIPath, "--help"}})
	if err != nil || res.Code != 0 || !strings.Contains(res.Output, "runbox runs shell commands") {
		t.Fatalf("runbox --help in the container = %+v, %v", res, err)
	}
	if res := mustRun(t, env, "ls /.runbox"); !strings.Contains(res.Output, "runbox\n") {
		t.Errorf("the CLI is not at %s after a command ran it: %q", docker.CLIPath, res.Output)
	}

	asAgent := open(t, docker.Options{Image: busyboxImage, AgentBinary: cliBin})
	if fb := asAgent.Fallback(); fb != "" {
		t.Fatalf("the README's runbox as the agent: fallback %q", fb)
	}
	ci, err := cli.ContainerInspect(t.Context(), asAgent.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	var vol string
	for _, m := range ci.Mounts {
		if m.Destination == "/.runbox/agent" && !m.RW {
			vol = m.Name
		}
	}
	if vol == "" {
		t.Fatalf("no read-only agent volume at /.runbox/agent: %+v", ci.Mounts)
	}
	res = mustRun(t, asAgent, "ls /.runbox; ps -o args | grep -c '^/.runbox/agent/runbox-agent agent'")
	if res.Output != "agent\n1\n" {
		t.Errorf("container with the mounted agent holds / runs %q; want the volume alone, its agent running", res.Output)
	}
}

// TestEnv_LargeResultThroughAgent: a result larger than one protocol frame
// comes back whole from the container, within its deadline.
func TestEnv_LargeResultThroughAgent(t *testing.T) {
	engine(t, busyboxImage)
	env := open(t, docker.Options{Image: busyboxImage})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: "head -c 1500000 /dev/zero | tr '\\0' x", OutputLimit: 2 << 20})
	if err != nil || len(res.Output) != 1500000 || res.Truncated {
		n := -1
		if res != nil {
			n = len(res.Output)
		}
		t.Fatalf("Run = %d bytes, %v; want 1500000, whole", n, err)
	}
}
