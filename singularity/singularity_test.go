package singularity_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/singularity"
)

// agentBin is the static runbox-agent built once by TestMain ("" if the
// build failed; agentErr says why).
var agentBin, agentErr = "", error(nil)

// helperEnv marks a run of this test binary as the owner helper of
// TestReap: a runbox process that opens an environment and then waits.
const helperEnv = "RUNBOX_SINGULARITY_TEST_OWNER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(ownerHelper())
	}
	dir, err := os.MkdirTemp("", "runbox-singularity-test-*")
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

// setup is a real Apptainer and a SIF to start instances of.
type setup struct {
	program, sif string
}

// apptainer finds the program (RUNBOX_TEST_APPTAINER, else PATH) and the
// test image (RUNBOX_TEST_SIF), as scripts/apptainer/build.sh prints them.
func apptainer(t *testing.T) setup {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Apptainer instances")
	}
	s := setup{program: os.Getenv("RUNBOX_TEST_APPTAINER"), sif: os.Getenv("RUNBOX_TEST_SIF")}
	if s.program == "" {
		for _, n := range []string{"apptainer", "singularity"} {
			if p, err := exec.LookPath(n); err == nil {
				s.program = p
				break
			}
		}
	}
	if s.program == "" {
		integration.Skip(t, "no apptainer: set RUNBOX_TEST_APPTAINER (scripts/apptainer/build.sh builds one and prints it)")
	}
	if s.sif == "" {
		integration.Skip(t, "no test image: set RUNBOX_TEST_SIF (scripts/apptainer/build.sh prints it)")
	}
	if _, err := os.Stat(s.sif); err != nil {
		integration.Skip(t, "test image: %v", err)
	}
	if _, err := singularity.Probe(t.Context(), singularity.Options{Program: s.program}); err != nil {
		integration.Skip(t, "apptainer cannot run here: %v", err)
	}
	if agentBin == "" {
		t.Fatalf("agent build: %v", agentErr)
	}
	return s
}

// options are the Options of an environment of s, with a state
// directory of the test's own.
func (s setup) options(t *testing.T) singularity.Options {
	return singularity.Options{
		Program:     s.program,
		Image:       s.sif,
		StateDir:    t.TempDir(),
		AgentBinary: agentBin,
	}
}

func open(t *testing.T, o singularity.Options) *singularity.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env, err := singularity.New(ctx, o)
	if err != nil {
		t.Fatalf("singularity.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func mustRun(t *testing.T, env envs.Environment, cmd envs.Command) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := env.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("Run(%q): %v", cmd.Shell, err)
	}
	return res
}

// running lists the user's running instances by name, with the program
// itself.
func running(t *testing.T, program string) map[string]bool {
	t.Helper()
	out, err := exec.Command(program, "instance", "list", "--json").Output()
	if err != nil {
		t.Fatalf("instance list: %v", err)
	}
	var v struct {
		Instances []struct {
			Name string `json:"instance"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("instance list: %v: %s", err, out)
	}
	m := map[string]bool{}
	for _, in := range v.Instances {
		m[in.Name] = true
	}
	return m
}

// TestConformance runs the contract suite through the agent in a real
// Apptainer instance (containall, user namespace).
func TestConformance(t *testing.T) {
	s := apptainer(t)
	envtest.Run(t, func(t *testing.T) envs.Environment {
		env := open(t, s.options(t))
		if fb := env.Fallback(); fb != "" {
			t.Fatalf("agent not used: %s", fb)
		}
		return env
	})
}

// TestEnv_CloseStopsInstance: an environment's own instance is stopped
// at Close; without it, instances would pile up per command run.
func TestEnv_CloseStopsInstance(t *testing.T) {
	s := apptainer(t)
	env := open(t, s.options(t))
	name := env.Instance()
	if !running(t, s.program)[name] {
		t.Fatalf("instance %s is not running after New", name)
	}
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if running(t, s.program)[name] {
		t.Fatalf("instance %s still runs after Close", name)
	}
}

// TestEnv_InstanceStoppedMidCommand stops the instance (as a user or an
// HPC job's end would) while a command runs: the command must fail at
// once with an error that says the instance is gone, and the next command
// must start it again and say the environment was recreated.
func TestEnv_InstanceStoppedMidCommand(t *testing.T) {
	s := apptainer(t)
	o := s.options(t)
	// The command says it runs through a FIFO in the bound workspace:
	// opening it for reading returns when the command opens it to write.
	o.Workspace = t.TempDir()
	fifo := filepath.Join(o.Workspace, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	env := open(t, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	mustRun(t, env, envs.Command{Shell: "export MARK=before"})

	ran := make(chan error, 1)
	go func() {
		_, err := env.Run(ctx, envs.Command{Shell: "echo go >/workspace/started; sleep 300"})
		ran <- err
	}()
	started := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("read the start FIFO: %v", err)
		}
	case err := <-ran:
		t.Fatalf("command ended before it started: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("command not started after 2 minutes")
	}

	if out, err := exec.CommandContext(ctx, s.program, "instance", "stop", env.Instance()).CombinedOutput(); err != nil {
		t.Fatalf("instance stop: %v: %s", err, out)
	}
	select {
	case err := <-ran:
		if err == nil || !strings.Contains(err.Error(), "instance "+env.Instance()+" is gone") {
			t.Fatalf("Run after the stop = %v; want an error saying the instance is gone", err)
		}
		t.Logf("the command failed with: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("command still running 60s after its instance stopped")
	}

	res := mustRun(t, env, envs.Command{Shell: `echo "back:$MARK"`})
	if !res.EnvironmentRecreated || res.Output != "back:\n" {
		t.Fatalf("after the stop: recreated=%v output=%q; want true and %q", res.EnvironmentRecreated, res.Output, "back:\n")
	}
	if !running(t, s.program)[env.Instance()] {
		t.Fatalf("instance %s was not started again", env.Instance())
	}
}

// TestEnv_TaskFoundAgain: a task's instance outlives Close and the next
// environment of the same task finds it by name, with what the first
// wrote; another task gets an instance of its own.
func TestEnv_TaskFoundAgain(t *testing.T) {
	s := apptainer(t)
	o := s.options(t)
	o.Owner = "tester"
	o.Task = fmt.Sprintf("found-%d", time.Now().UnixNano())
	t.Cleanup(func() { singularity.RemoveTask(context.Background(), o, o.Task) })

	first := open(t, o)
	mustRun(t, first, envs.Command{Shell: "echo kept >/tmp/mark"})
	if err := first.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !running(t, s.program)[first.Instance()] {
		t.Fatalf("task instance %s stopped at Close", first.Instance())
	}

	again := open(t, o)
	if again.Instance() != first.Instance() {
		t.Fatalf("second open uses instance %s; want %s", again.Instance(), first.Instance())
	}
	if res := mustRun(t, again, envs.Command{Shell: "cat /tmp/mark"}); res.Output != "kept\n" {
		t.Fatalf("task instance lost its file: %q", res.Output)
	}

	other := o
	other.Task += "-other"
	t.Cleanup(func() { singularity.RemoveTask(context.Background(), other, other.Task) })
	res := mustRun(t, open(t, other), envs.Command{Shell: "cat /tmp/mark 2>/dev/null || echo none"})
	if res.Output != "none\n" {
		t.Fatalf("another task sees the first task's file: %q", res.Output)
	}

	if _, err := singularity.RemoveTask(t.Context(), o, o.Task); err != nil {
		t.Fatalf("RemoveTask: %v", err)
	}
	if running(t, s.program)[first.Instance()] {
		t.Fatalf("task instance %s still runs after RemoveTask", first.Instance())
	}
}

// TestEnv_SetsidChildDiesWithCommand: a child that left the command's
// session (setsid) still dies when the command times out. The control
// runs the same script with a plain exec into the same instance, killed
// the same way: there the child survives, so it is the agent's tree kill
// that ends it.
func TestEnv_SetsidChildDiesWithCommand(t *testing.T) {
	s := apptainer(t)
	env := open(t, s.options(t))
	const script = `setsid sleep 777 & echo $! >/tmp/child; wait`
	alive := `if kill -0 "$(cat /tmp/child)" 2>/dev/null; then echo alive; else echo dead; fi`

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	ctl := exec.CommandContext(ctx, s.program, "exec", "instance://"+env.Instance(), "/bin/sh", "-c", script)
	ctl.WaitDelay = 5 * time.Second
	ctl.Run() // killed at the deadline
	if res := mustRun(t, env, envs.Command{Shell: alive}); res.Output != "alive\n" {
		t.Fatalf("control: the setsid child of a killed plain exec is %q; want alive (the test would prove nothing)", res.Output)
	}

	res := mustRun(t, env, envs.Command{Shell: script, Timeout: 2 * time.Second})
	if !res.TimedOut {
		t.Fatalf("command did not time out: %+v", res)
	}
	if res := mustRun(t, env, envs.Command{Shell: alive}); res.Output != "dead\n" {
		t.Fatalf("setsid child survived its command: %q", res.Output)
	}
}

// TestEnv_SecretsStayOut: a secret in runbox's own environment (a token
// an agent builder exported, and APPTAINERENV_*, which the program copies
// into every container it starts) is visible nowhere in the instance,
// while a command's own variables still reach it. The control run execs
// into the same instance with runbox's environment and no --cleanenv, and
// sees both: the protection is what keeps them out.
func TestEnv_SecretsStayOut(t *testing.T) {
	s := apptainer(t)
	const secret, forwarded = "s3cr3t-9f2e71", "fwd-secret-55ab"
	t.Setenv("GITHUB_TOKEN", secret)
	t.Setenv("APPTAINERENV_LEAKED", forwarded)
	o := s.options(t)
	o.Env = map[string]string{"MY_VAR": "given"}
	env := open(t, o)

	res := mustRun(t, env, envs.Command{Shell: `env; cat /proc/1/environ | tr '\0' '\n'; echo "MY_VAR=$MY_VAR"`})
	if strings.Contains(res.Output, secret) || strings.Contains(res.Output, forwarded) {
		t.Fatalf("runbox's secret is visible in the instance:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "MY_VAR=given") {
		t.Fatalf("the command's own variable did not arrive:\n%s", res.Output)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.program, "exec", "instance://"+env.Instance(), "env")
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control exec: %v", err)
	}
	if !strings.Contains(string(out), secret) || !strings.Contains(string(out), "LEAKED="+forwarded) {
		t.Fatalf("control: an exec with runbox's environment does not see the secrets, so the test proves nothing:\n%s", out)
	}
}

// TestEnv_Network: network none leaves the instance loopback only; the
// control (the host's network) shows the host's interfaces.
func TestEnv_Network(t *testing.T) {
	s := apptainer(t)
	for _, tc := range []struct {
		network string
		onlyLo  bool
	}{
		{"", false},
		{"none", true},
	} {
		t.Run("network="+tc.network, func(t *testing.T) {
			o := s.options(t)
			o.Network = tc.network
			env := open(t, o)
			res := mustRun(t, env, envs.Command{Shell: `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '`})
			ifaces := strings.Fields(res.Output)
			if onlyLo := len(ifaces) == 1 && ifaces[0] == "lo"; onlyLo != tc.onlyLo {
				t.Fatalf("network %q: interfaces %v; want loopback only = %v", tc.network, ifaces, tc.onlyLo)
			}
			want := envs.Unsupported
			if tc.onlyLo {
				want = envs.Active
			}
			if got := env.Capabilities().State(envs.CapNetworkPolicy); got != want {
				t.Fatalf("network %q: network_policy %v; want %v", tc.network, got, want)
			}
		})
	}
}

// TestReap: an instance whose runbox process was killed (no Close ran) is
// stopped by Reap; one whose process lives is kept, and its process
// stops it at its Close.
func TestReap(t *testing.T) {
	s := apptainer(t)
	o := s.options(t)
	dead, _, deadName := startOwner(t, s, o.StateDir)
	live, liveIn, liveName := startOwner(t, s, o.StateDir)
	if err := dead.Process.Kill(); err != nil {
		t.Fatalf("kill owner: %v", err)
	}
	dead.Wait()
	up := running(t, s.program)
	if !up[deadName] || !up[liveName] {
		t.Fatalf("before Reap: %s running %v, %s running %v; want both", deadName, up[deadName], liveName, up[liveName])
	}

	reaped, err := singularity.Reap(t.Context(), o)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	up = running(t, s.program)
	if up[deadName] {
		t.Fatalf("instance %s of a killed owner survives Reap (reaped %v)", deadName, reaped)
	}
	if !up[liveName] {
		t.Fatalf("instance %s of a live owner was reaped", liveName)
	}
	if _, err := os.Stat(filepath.Join(o.StateDir, deadName)); !os.IsNotExist(err) {
		t.Fatalf("host directory of %s left behind: %v", deadName, err)
	}

	liveIn.Close() // the owner closes its environment and exits
	if err := live.Wait(); err != nil {
		t.Fatalf("live owner: %v", err)
	}
	if running(t, s.program)[liveName] {
		t.Fatalf("instance %s still runs after its owner's Close", liveName)
	}
}

// startOwner starts this test binary as ownerHelper, a runbox process
// that opens an environment and waits on its stdin, and returns it with
// its instance's name.
func startOwner(t *testing.T, s setup, stateDir string) (*exec.Cmd, io.Closer, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_PROGRAM="+s.program, "HELPER_SIF="+s.sif,
		"HELPER_STATE="+stateDir, "HELPER_AGENT="+agentBin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		// A test that failed half way leaves no instance behind.
		singularity.Reap(context.Background(), singularity.Options{Program: s.program, StateDir: stateDir})
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("owner helper: %v", err)
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(line), "instance ")
	if !ok {
		t.Fatalf("owner helper said %q", line)
	}
	return cmd, stdin, name
}

// ownerHelper is a runbox process for TestReap: it opens an environment,
// prints its instance's name, and closes it when its stdin ends (unless
// it is killed first).
func ownerHelper() int {
	ctx := context.Background()
	env, err := singularity.New(ctx, singularity.Options{
		Program:     os.Getenv("HELPER_PROGRAM"),
		Image:       os.Getenv("HELPER_SIF"),
		StateDir:    os.Getenv("HELPER_STATE"),
		AgentBinary: os.Getenv("HELPER_AGENT"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner helper:", err)
		return 1
	}
	fmt.Printf("instance %s\n", env.Instance())
	io.Copy(io.Discard, os.Stdin)
	if err := env.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "owner helper: close:", err)
		return 1
	}
	return 0
}

// TestEnv_Contain: each containment mode gives what Capabilities says it
// does. Every instance has a PID namespace of its own (PID 1 is its
// appinit); containall adds an IPC namespace and, like contain, hides the
// host's /tmp; none shows the host's /tmp. The host's side is a marker
// file in a directory under /tmp and this process's IPC namespace.
func TestEnv_Contain(t *testing.T) {
	s := apptainer(t)
	hostDir, err := os.MkdirTemp("/tmp", "runbox-contain-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	marker := filepath.Join(hostDir, "marker")
	if err := os.WriteFile(marker, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		contain          singularity.Contain
		ownIPC, seesHost bool
		state            envs.CapState
	}{
		{singularity.ContainAll, true, false, envs.Active},
		{singularity.ContainDirs, false, false, envs.Degraded},
		{singularity.ContainNone, false, true, envs.Degraded},
	} {
		t.Run(string(tc.contain), func(t *testing.T) {
			o := s.options(t)
			o.Contain = tc.contain
			env := open(t, o)
			res := mustRun(t, env, envs.Command{Shell: "cat /proc/1/comm; readlink /proc/self/ns/ipc; cat " + marker + " 2>/dev/null || echo none"})
			got := strings.Split(strings.TrimSpace(res.Output), "\n")
			if len(got) != 3 {
				t.Fatalf("contain %s: output %q", tc.contain, res.Output)
			}
			if got[0] != "appinit" {
				t.Errorf("contain %s: PID 1 is %q; want the instance's appinit", tc.contain, got[0])
			}
			if ownIPC := got[1] != hostIPC; ownIPC != tc.ownIPC {
				t.Errorf("contain %s: IPC namespace %s (host %s); want one of its own = %v", tc.contain, got[1], hostIPC, tc.ownIPC)
			}
			if seesHost := got[2] == "host"; seesHost != tc.seesHost {
				t.Errorf("contain %s: sees the host's /tmp = %v; want %v", tc.contain, seesHost, tc.seesHost)
			}
			if st := env.Capabilities().State(envs.CapContainment); st != tc.state {
				t.Errorf("contain %s: containment %v; want %v", tc.contain, st, tc.state)
			}
		})
	}
}
