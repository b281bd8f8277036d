package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"go.uber.org/goleak"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
)

const (
	debianImage  = "runbox-test-debian:bookworm"
	busyboxImage = "runbox-test-busybox:latest"
)

// agentBin is the static runbox-agent built once by TestMain ("" if the
// build failed; agentErr says why).
var agentBin, agentErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runbox-docker-test-*")
	if err == nil {
		agentBin = filepath.Join(dir, "runbox-agent")
		if agentErr = testproc.BuildAgent(agentBin); agentErr != nil {
			agentBin = ""
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	// Every Env closes its agent stream and engine client with it.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// engine returns a client of an answering engine with image present.
func engine(t *testing.T, image string) *client.Client {
	t.Helper()
	cli, err := docker.NewClient()
	if err != nil {
		integration.Skip(t, "no docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		integration.Skip(t, "no docker engine answers (run scripts/docker/start-dockerd.sh): %v", err)
	}
	if image != "" {
		if _, err := cli.ImageInspect(ctx, image); err != nil {
			integration.Skip(t, "image %s missing (run scripts/docker/build-images.sh): %v", image, err)
		}
	}
	if agentBin == "" {
		t.Fatalf("%v", agentErr)
	}
	return cli
}

func open(t *testing.T, opts docker.Options) *docker.Env {
	t.Helper()
	if opts.AgentBinary == "" {
		opts.AgentBinary = agentBin
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	env, err := docker.New(ctx, opts)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func mustRun(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

// TestConformance runs the contract suite through the agent: in the
// Debian image everything local guarantees holds inside the container; in
// the busybox image (no bash) the static agent needs nothing from the
// image and local falls back to sh.
func TestConformance(t *testing.T) {
	for _, image := range []string{debianImage, busyboxImage} {
		t.Run(image, func(t *testing.T) {
			engine(t, image)
			envtest.Run(t, func(t *testing.T) envs.Environment {
				env := open(t, docker.Options{Image: image})
				if fb := env.Fallback(); fb != "" {
					t.Fatalf("agent not used: %s", fb)
				}
				return env
			})
		})
	}
}

// TestEnv_ExecFallback checks the degraded path: without the agent,
// commands still run, their exit codes and output are right, a timeout
// still ends the call, and the capabilities say what is missing.
func TestEnv_ExecFallback(t *testing.T) {
	engine(t, busyboxImage)
	env := open(t, docker.Options{Image: busyboxImage, NoAgent: true, Env: map[string]string{"RB_X": "y"}})
	if env.Fallback() == "" {
		t.Fatal("Fallback() is empty with NoAgent")
	}
	res := mustRun(t, env, `echo "out $RB_X"; echo err >&2; exit 3`)
	if res.Code != 3 || res.Output != "out y\nerr\n" {
		t.Errorf("fallback Run = %d %q; want 3 \"out y\\nerr\\n\"", res.Code, res.Output)
	}
	if len(res.Warnings) == 0 {
		t.Errorf("fallback result carries no degradation warning")
	}
	start := time.Now()
	ctx := t.Context()
	res, err := env.Run(ctx, envs.Command{Shell: "sleep 30", Timeout: 500 * time.Millisecond})
	if err != nil || !res.TimedOut || res.Code != envs.ExitTimeout {
		t.Errorf("fallback timeout = %+v, %v; want 124", res, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("fallback timeout took %v", d)
	}
	caps := env.Capabilities()
	if caps.State(envs.CapTreeKill) != envs.Degraded || caps.State(envs.CapDurableOutput) != envs.Unsupported {
		t.Errorf("fallback caps: tree_kill %v, durable_output %v; want degraded, unsupported", caps.State(envs.CapTreeKill), caps.State(envs.CapDurableOutput))
	}
}

// TestEnv_SecretsNotInInspect protects the rule that secrets travel only
// with commands: nothing docker inspect shows holds the value.
func TestEnv_SecretsNotInInspect(t *testing.T) {
	cli := engine(t, debianImage)
	const secret = "s3cr3t-value-4c1d"
	env := open(t, docker.Options{Image: debianImage, Env: map[string]string{"RUNBOX_FORCE_GITHUB_TOKEN": secret}})
	res := mustRun(t, env, `printf %s "$GITHUB_TOKEN"`)
	if res.Output != secret {
		t.Fatalf("command did not get the forced secret: %q", res.Output)
	}
	raw, err := exec.Command("docker", "inspect", env.ContainerID()).CombinedOutput()
	if err != nil {
		ci, ierr := cli.ContainerInspect(t.Context(), env.ContainerID())
		if ierr != nil {
			t.Fatalf("inspect: %v / %v", err, ierr)
		}
		raw = fmt.Appendf(nil, "%+v %+v %+v", ci.Config, ci.HostConfig, ci.ContainerJSONBase)
	}
	if strings.Contains(string(raw), secret) {
		t.Fatalf("docker inspect shows the secret")
	}
}

// TestEnv_Lifecycle: an ephemeral container is removed on Close; a
// persistent one survives Close and is reused (started again if stopped)
// by the next New for the same task.
func TestEnv_Lifecycle(t *testing.T) {
	cli := engine(t, debianImage)
	ctx := t.Context()
	eph := open(t, docker.Options{Image: debianImage})
	id := eph.ContainerID()
	if err := eph.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
		t.Errorf("ephemeral container %s still exists after Close (err %v)", id, err)
	}

	task := "lifecycle-" + fmt.Sprint(time.Now().UnixNano())
	p1 := open(t, docker.Options{Image: debianImage, Persistent: true, Task: task})
	mustRun(t, p1, "echo kept >/root/marker")
	id1 := p1.ContainerID()
	t.Cleanup(func() { cli.ContainerRemove(context.Background(), id1, container.RemoveOptions{Force: true}) })
	if err := p1.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ci, err := cli.ContainerInspect(ctx, id1)
	if err != nil || ci.State.Running {
		t.Fatalf("persistent container after Close: running=%v err=%v; want stopped, present", ci.State != nil && ci.State.Running, err)
	}
	p2 := open(t, docker.Options{Image: debianImage, Persistent: true, Task: task})
	if p2.ContainerID() != id1 {
		t.Fatalf("persistent New made container %s; want the task's %s", p2.ContainerID(), id1)
	}
	if res := mustRun(t, p2, "cat /root/marker"); res.Output != "kept\n" {
		t.Errorf("reused container lost its file: %q", res.Output)
	}
}

// TestEnv_ContainerKilledMidCommand: a container killed from outside
// fails the running (started, streaming) command of a session quickly
// with an error that says the container was killed (envs.ErrSandboxKilled,
// a *docker.KilledError), and the next command recreates the environment,
// says so, and has lost the session's state.
func TestEnv_ContainerKilledMidCommand(t *testing.T) {
	cli := engine(t, debianImage)
	env := open(t, docker.Options{Image: debianImage})
	mustRun(t, env, "cd /tmp")
	p, err := env.Start(t.Context(), envs.Command{Shell: "echo started; sleep 60"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	// The command runs once its first line arrives.
	if line, err := bufio.NewReader(p.Output()).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	go io.Copy(io.Discard, p.Output())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Wait(context.Background())
		errc <- err
	}()
	start := time.Now()
	id := env.ContainerID()
	if err := cli.ContainerKill(t.Context(), id, "KILL"); err != nil {
		t.Fatalf("docker kill: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, envs.ErrClosed) || !strings.Contains(err.Error(), "agent") {
			t.Fatalf("Wait during the kill = %v; want a lost-agent error (envs.ErrClosed)", err)
		}
		t.Logf("error: %v", err)
		assertKilled(t, err, docker.KilledError{Container: id[:12], Status: "exited", ExitCode: 137, Signal: 9})
	case <-time.After(20 * time.Second):
		t.Fatalf("Run still hangs 20s after the container was killed")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %v", d)
	}
	res := mustRun(t, env, "pwd")
	if !res.EnvironmentRecreated || res.Output == "/tmp\n" {
		t.Errorf("next Run: recreated=%v pwd=%q; want true, and not the killed session's /tmp", res.EnvironmentRecreated, res.Output)
	}
	if res := mustRun(t, env, "true"); res.EnvironmentRecreated {
		t.Errorf("EnvironmentRecreated reported twice")
	}
}

// TestEnv_ContainerRemovedFromOutside: the next command after a docker rm
// recreates the container.
func TestEnv_ContainerRemovedFromOutside(t *testing.T) {
	cli := engine(t, busyboxImage)
	env := open(t, docker.Options{Image: busyboxImage})
	old := env.ContainerID()
	if err := cli.ContainerRemove(t.Context(), old, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: "echo hi"})
	if err != nil { // the first command may see the dead stream
		res, err = env.Run(ctx, envs.Command{Shell: "echo hi"})
	}
	if err != nil || !res.EnvironmentRecreated || env.ContainerID() == old {
		t.Fatalf("after docker rm: %+v, %v; want a recreated container", res, err)
	}
}

// TestEnv_TreeKillInContainer: killing a command whose tree has a
// background setsid child leaves no process of it in the container.
func TestEnv_TreeKillInContainer(t *testing.T) {
	engine(t, debianImage)
	env := open(t, docker.Options{Image: debianImage})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := env.Start(ctx, envs.Command{Shell: "setsid sleep 313 & sleep 314 & echo ready; wait"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	buf := make([]byte, 6)
	if _, err := p.Output().Read(buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	p.Wait(ctx)
	res := mustRun(t, env, "ps -eo args | grep -c '^sleep 31[34]' || true")
	if strings.TrimSpace(res.Output) != "0" {
		t.Fatalf("processes left after the tree kill: %q", res.Output)
	}
}

// TestNew_MissingImage: an image that is neither present nor pullable
// fails quickly with an error naming it.
func TestNew_MissingImage(t *testing.T) {
	engine(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	const img = "runbox-test-no-such-image:nope"
	_, err := docker.New(ctx, docker.Options{Image: img, AgentBinary: agentBin})
	var ie *docker.ImageError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), img) || !errors.Is(err, envs.ErrNotFound) {
		t.Fatalf("New with a missing image = %v; want *ImageError naming %s", err, img)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("failing took %v", d)
	}
}

// TestEnv_SecurityDefaults checks the container's configuration: all
// capabilities dropped but the documented few, no-new-privileges, a pids
// limit, /tmp on tmpfs, and network none when asked.
func TestEnv_SecurityDefaults(t *testing.T) {
	cli := engine(t, busyboxImage)
	env := open(t, docker.Options{Image: busyboxImage, Network: "none", ReadOnlyRoot: true, Limits: envs.Limits{MemoryBytes: 256 << 20}})
	ci, err := cli.ContainerInspect(t.Context(), env.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	hc := ci.HostConfig
	if len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || hc.PidsLimit == nil || *hc.PidsLimit != docker.DefaultPidsLimit ||
		!strings.Contains(strings.Join(hc.SecurityOpt, ","), "no-new-privileges") || hc.Tmpfs["/tmp"] == "" ||
		string(hc.NetworkMode) != "none" || !hc.ReadonlyRootfs || hc.Memory != 256<<20 {
		t.Fatalf("host config = %+v", hc)
	}
	if fb := env.Fallback(); fb != "" {
		t.Errorf("agent not used on a read-only root: %s", fb)
	}
	res := mustRun(t, env, "touch /rootfile 2>/dev/null && echo writable; touch /tmp/x && echo tmp-ok")
	if res.Output != "tmp-ok\n" {
		t.Errorf("read-only root: %q", res.Output)
	}
	if env.Capabilities().State(envs.CapHostAccess) != envs.Unsupported {
		t.Errorf("host access reported without a workspace")
	}
}

// TestEnv_FilesAndWorkspace round-trips files through the agent and the
// archive API, and checks the workspace mount and its capability.
func TestEnv_FilesAndWorkspace(t *testing.T) {
	engine(t, busyboxImage)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("from host\n"), 0o644)
	env := open(t, docker.Options{Image: busyboxImage, Workspace: ws})
	if env.Capabilities().State(envs.CapHostAccess) != envs.Active {
		t.Errorf("workspace mounted but host access not active")
	}
	if res := mustRun(t, env, "pwd; cat hello.txt"); res.Output != "/workspace\nfrom host\n" {
		t.Errorf("workspace: %q", res.Output)
	}
	ctx := t.Context()
	if err := env.PutFile(ctx, "/tmp/a/b.txt", strings.NewReader("data"), 0o600); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	if res := mustRun(t, env, "cat /tmp/a/b.txt"); res.Output != "data" {
		t.Errorf("put file reads %q", res.Output)
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "tree", "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "tree", "sub", "f"), []byte("x"), 0o644)
	os.Symlink("sub/f", filepath.Join(src, "tree", "link"))
	if err := env.CopyTo(ctx, filepath.Join(src, "tree"), "/root"); err != nil {
		t.Fatalf("CopyTo: %v", err)
	}
	out := t.TempDir()
	if err := env.CopyFrom(ctx, "/root/tree", out); err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "tree", "link")); err != nil || string(b) != "x" {
		t.Errorf("copied tree: %q, %v", b, err)
	}
	mustRun(t, env, "mkdir -p /root/evil && ln -s /etc/passwd /root/evil/pw")
	if err := env.CopyFrom(ctx, "/root/evil", t.TempDir()); !errors.Is(err, docker.ErrUnsafePath) {
		t.Errorf("CopyFrom with an absolute symlink = %v; want ErrUnsafePath", err)
	}
}
