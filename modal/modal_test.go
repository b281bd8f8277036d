package modal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/modal"
	"github.com/runbox/runbox/modal/modaltest"
)

// agentBin is the static runbox-agent built once by TestMain.
var agentBin string

func TestMain(m *testing.M) { os.Exit(testproc.AgentMain(m, &agentBin)) }

const (
	tokenID     = "ak-runbox-test"
	tokenSecret = "as-9c1f7e2b4d6a8c0e"
)

// fake starts the fake Modal and points the SDK's process-level server
// address at it (the token goes only through Options.Getenv).
func fake(t *testing.T, notReady int) *modaltest.Server {
	t.Helper()
	srv, err := modaltest.Start(modaltest.Config{TokenID: tokenID, TokenSecret: tokenSecret, Dir: t.TempDir(), NotReady: notReady})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	t.Setenv("MODAL_SERVER_URL", srv.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	return srv
}

func launchEnv(srv *modaltest.Server, extra map[string]string) func(string) string {
	m := map[string]string{"MODAL_TOKEN_ID": tokenID, "MODAL_TOKEN_SECRET": tokenSecret, "MODAL_SERVER_URL": srv.URL(), "MODAL_CONFIG_PATH": "/nonexistent/modal.toml"}
	for k, v := range extra {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func options(t *testing.T, srv *modaltest.Server) modal.Options {
	return modal.Options{
		Getenv:      launchEnv(srv, nil),
		Image:       "python:3.12-slim",
		AgentBinary: agentBin,
		AgentDir:    filepath.Join(t.TempDir(), "agent"),
		Owner:       "tester",
	}
}

func open(t *testing.T, o modal.Options) *modal.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := modal.New(ctx, o)
	if err != nil {
		t.Fatalf("modal.New: %v", err)
	}
	return env
}

func run(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("run %q: %v", shell, err)
	}
	return res
}

func TestEnv_Conformance(t *testing.T) {
	srv := fake(t, 2)
	// One agent directory for all: the fake's sandboxes share this
	// machine's paths, so later sandboxes find the agent already there
	// (CopyIn keeps a same-sized file), as a reused sandbox does.
	agentDir := filepath.Join(t.TempDir(), "agent")
	envtest.Run(t, func(t *testing.T) envs.Environment {
		o := options(t, srv)
		o.AgentDir = agentDir
		return open(t, o)
	})
}

func TestNew_FirstExecRaceSurvived(t *testing.T) {
	srv := fake(t, 5)
	env := open(t, options(t, srv))
	defer env.Close(context.Background())
	if res := run(t, env, "echo ready"); strings.TrimSpace(res.Output) != "ready" || res.Code != 0 {
		t.Fatalf("got %+v", res)
	}
	if n := len(srv.Requested("SandboxGetTaskId")); n < 6 {
		t.Fatalf("SandboxGetTaskId called %d times; the fake withheld the task id 5 times, so the backend must have retried", n)
	}
}

func TestNew_NeverReadyIsABoundedError(t *testing.T) {
	srv := fake(t, 1<<30)
	o := options(t, srv)
	o.ReadyTimeout = 500 * time.Millisecond
	start := time.Now()
	_, err := modal.New(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "does not have a task ID") {
		t.Fatalf("err = %v, want the missing task id", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	if r := srv.Running(); len(r) != 0 {
		t.Fatalf("sandboxes left running after the failed start: %v", r)
	}
}

func TestNew_MissingCredentials(t *testing.T) {
	srv := fake(t, 0)
	o := options(t, srv)
	home := t.TempDir()
	o.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	_, err := modal.New(context.Background(), o)
	if !errors.Is(err, modal.ErrNoCredentials) || !strings.Contains(err.Error(), "MODAL_TOKEN_ID") {
		t.Fatalf("err = %v, want ErrNoCredentials naming the variables", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent without credentials", n)
	}
}

func TestNew_AuthFailureNamesProfileFile(t *testing.T) {
	srv := fake(t, 0)
	cfg := filepath.Join(t.TempDir(), "modal.toml")
	body := fmt.Sprintf("[work]\ntoken_id = %q\ntoken_secret = \"as-wrong\"\nserver_url = %q\nactive = true\n", tokenID, srv.URL())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	o := options(t, srv)
	o.Getenv = func(k string) string {
		return map[string]string{"MODAL_CONFIG_PATH": cfg, "MODAL_SERVER_URL": srv.URL()}[k]
	}
	_, err := modal.New(context.Background(), o)
	if !errors.Is(err, modal.ErrAuth) || !strings.Contains(err.Error(), `profile "work" in `+cfg) {
		t.Fatalf("err = %v, want ErrAuth naming the profile and file", err)
	}
	if strings.Contains(err.Error(), "as-wrong") {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

func TestNew_AuthFailureNamesEnvironment(t *testing.T) {
	srv := fake(t, 0)
	o := options(t, srv)
	o.Getenv = launchEnv(srv, map[string]string{"MODAL_TOKEN_SECRET": "as-bad"})
	_, err := modal.New(context.Background(), o)
	if !errors.Is(err, modal.ErrAuth) || !strings.Contains(err.Error(), "environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)") {
		t.Fatalf("err = %v, want ErrAuth naming the environment", err)
	}
}

func TestEnv_ProvisioningAndNoSecretsInside(t *testing.T) {
	srv := fake(t, 1)
	o := options(t, srv)
	o.CPU, o.MemoryMiB = 1.5, 512
	o.Timeout, o.IdleTimeout = 10*time.Minute, 2*time.Minute
	o.Workdir = "/workspace"
	o.CIDRAllowlist = []string{"10.0.0.0/8"}
	o.Task = "task-7"
	o.App = "my-app"
	o.Env = map[string]string{"GREETING": "hi"}
	env := open(t, o)
	defer env.Close(context.Background())

	res := run(t, env, `env; echo "greeting=$GREETING"`)
	if !strings.Contains(res.Output, "greeting=hi") {
		t.Fatalf("the command's env did not arrive: %s", res.Output)
	}
	if strings.Contains(res.Output, tokenSecret) || strings.Contains(res.Output, "MODAL_TOKEN") {
		t.Fatalf("Modal credentials visible inside the sandbox:\n%s", res.Output)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Body, tokenSecret) {
			t.Fatalf("%s carried the token secret: %s", r.Method, r.Body)
		}
		if r.Method != "TaskExecStdinWrite" && strings.Contains(r.Body, "GREETING") {
			// It travels with the command, over the agent's stdin.
			t.Fatalf("%s carried the command env into the sandbox's configuration: %s", r.Method, r.Body)
		}
	}
	creates := srv.Requested("SandboxCreate")
	if len(creates) != 1 {
		t.Fatalf("%d SandboxCreate calls", len(creates))
	}
	for _, want := range []string{"milli_cpu:1500", "memory_mb:512", "timeout_secs:600", "idle_timeout_secs:120", `workdir:"/workspace"`, "ALLOWLIST", `allowed_cidrs:"10.0.0.0/8"`} {
		if !strings.Contains(strings.ReplaceAll(creates[0], " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("SandboxCreate lacks %s:\n%s", want, creates[0])
		}
	}
	tags := strings.ReplaceAll(strings.Join(srv.Requested("SandboxTagsSet"), "\n"), " ", "")
	for _, want := range []string{`tag_name:"runbox.owner"tag_value:"tester"`, `tag_name:"runbox.task"tag_value:"task-7"`} {
		if !strings.Contains(strings.ReplaceAll(tags, "\n", ""), want) {
			t.Errorf("tags lack %s:\n%s", want, tags)
		}
	}
	if apps := srv.Requested("AppGetOrCreate"); len(apps) == 0 || !strings.Contains(apps[0], `"my-app"`) {
		t.Errorf("app not looked up by name: %v", apps)
	}
	caps := env.Capabilities()
	if caps[envs.CapNetworkPolicy].State != envs.Active || caps[envs.CapTreeKill].State != envs.Active {
		t.Errorf("capabilities: %+v", caps)
	}
}

func TestEnv_TaskPersistsThroughSnapshot(t *testing.T) {
	srv := fake(t, 1)
	o := options(t, srv)
	o.Persistent, o.Task, o.StateDir = true, "build-42", t.TempDir()

	env := open(t, o)
	run(t, env, "echo kept > note.txt")
	first := srv.Running()
	if err := env.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if r := srv.Running(); len(r) != 0 {
		t.Fatalf("sandbox still running after close: %v", r)
	}
	if len(srv.Requested("SandboxSnapshotFs")) != 1 {
		t.Fatal("no snapshot taken on close")
	}
	env = open(t, o)
	if res := run(t, env, "cat note.txt"); strings.TrimSpace(res.Output) != "kept" {
		t.Fatalf("after reopen: %q (exit %d)", res.Output, res.Code)
	}
	if second := srv.Running(); len(second) != 1 || second[0] == first[0] {
		t.Fatalf("want a new sandbox restored from the snapshot: before %v, now %v", first, second)
	}
	if err := env.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(o.StateDir, "modal", "snapshots.json"))
	if err != nil || !strings.Contains(string(b), `"build-42"`) {
		t.Fatalf("snapshot record: %s %v", b, err)
	}
}

func TestEnv_LostSnapshotFallsBackToBaseImage(t *testing.T) {
	srv := fake(t, 0)
	o := options(t, srv)
	o.Persistent, o.Task, o.StateDir = true, "gone", t.TempDir()
	env := open(t, o)
	run(t, env, "echo x > f")
	env.Close(context.Background())
	b, _ := os.ReadFile(filepath.Join(o.StateDir, "modal", "snapshots.json"))
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(strings.Trim(f, `",`), "im-") {
			srv.DeleteImage(strings.Trim(f, `",`))
		}
	}
	env = open(t, o)
	defer env.Close(context.Background())
	if res := run(t, env, "test -e f; echo $?"); strings.TrimSpace(res.Output) != "1" {
		t.Fatalf("want a fresh sandbox from the base image, got %q", res.Output)
	}
}

func TestEnv_TerminatedMidSessionThenRecreated(t *testing.T) {
	srv := fake(t, 1)
	env := open(t, options(t, srv))
	defer env.Close(context.Background())
	ids := srv.Running()
	if len(ids) != 1 {
		t.Fatalf("running: %v", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := env.Run(ctx, envs.Command{Shell: "touch started; sleep 60"})
		errc <- err
	}()
	testwait.Within(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(srv.Dir(ids[0]), "started"))
		return err == nil
	})
	if err := srv.Terminate(ids[0]); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), ids[0]) || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("err = %v, want one saying sandbox %s was terminated", err, ids[0])
	}
	res := run(t, env, "echo again")
	if strings.TrimSpace(res.Output) != "again" || !res.EnvironmentRecreated || !strings.Contains(strings.Join(res.Warnings, ";"), "recreated") {
		t.Fatalf("after recreation: %+v", res)
	}
	if now := srv.Running(); len(now) != 1 || now[0] == ids[0] {
		t.Fatalf("want one new sandbox, got %v", now)
	}
}

func TestReap_TerminatesOnlyTheOwnersLeftovers(t *testing.T) {
	srv := fake(t, 0)
	mine := open(t, options(t, srv))
	defer mine.Close(context.Background())
	o := options(t, srv)
	o.Owner = "someone-else"
	theirs := open(t, o)
	defer theirs.Close(context.Background())
	before := srv.Running()
	if len(before) != 2 {
		t.Fatalf("running: %v", before)
	}
	ids, err := modal.Reap(context.Background(), launchEnv(srv, nil), "", "tester")
	if err != nil {
		t.Fatal(err)
	}
	left := srv.Running()
	if len(ids) != 1 || len(left) != 1 || left[0] == ids[0] {
		t.Fatalf("reaped %v, left %v (of %v)", ids, left, before)
	}
	if res := run(t, theirs, "echo still"); strings.TrimSpace(res.Output) != "still" {
		t.Fatalf("the other owner's sandbox: %+v", res)
	}
}

func TestNew_ServerMismatchRefused(t *testing.T) {
	srv := fake(t, 0)
	o := options(t, srv)
	o.Getenv = launchEnv(srv, map[string]string{"MODAL_SERVER_URL": "http://127.0.0.1:1"})
	_, err := modal.New(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:1") || !strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("err = %v, want the two servers named", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestEnv_SurvivesTransportFaults: with every output stream cut after a
// few bytes and some stdin replies lost, the SDK resumes by offset and
// the agent's stream stays whole (the agent protocol would fail on a
// missing or repeated byte).
func TestEnv_SurvivesTransportFaults(t *testing.T) {
	srv, err := modaltest.Start(modaltest.Config{TokenID: tokenID, TokenSecret: tokenSecret, Dir: t.TempDir(), CutStdioAfter: 4096, LoseStdinAckEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	t.Setenv("MODAL_SERVER_URL", srv.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	env := open(t, options(t, srv))
	defer env.Close(context.Background())
	local, err := exec.Command("sh", "-c", "seq 1 20000").Output()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res := run(t, env, fmt.Sprintf("seq 1 20000; echo round %d", i))
		got, _ := strings.CutSuffix(res.Output, fmt.Sprintf("round %d\n", i))
		if got != string(local) || !strings.Contains(res.Output, fmt.Sprintf("round %d", i)) {
			t.Fatalf("round %d: %q", i, res.Output)
		}
	}
	big := strings.Repeat("x", 300_000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: "wc -c", Stdin: strings.NewReader(big)})
	if err != nil || strings.TrimSpace(res.Output) != "300000" {
		t.Fatalf("stdin through lost replies: %+v %v", res, err)
	}
	ls := srv.Requested("TaskExecStdioRead")
	if len(ls) < 10 {
		t.Fatalf("only %d stdio reads: the cuts did not happen", len(ls))
	}
}
