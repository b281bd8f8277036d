package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/daytona/daytonatest"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/modal/modaltest"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/ssh/sshtest"
)

// dockerJobsServer is a server whose sessions run in the task's docker
// container (kept running after a session, so a test can look inside
// once the session is gone), with no job registry of this machine: a
// session's background jobs can only be the container's.
func dockerJobsServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	needDocker(t)
	task := fmt.Sprintf("server-%s-%s", strings.ToLower(t.Name()), strings.ToLower(rand.Text()[:8]))
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	cfg := config.Default()
	cfg.Docker.Image = syncImage
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := server.New(server.Options{
		Service: svc, Backend: "docker", Redeliver: 50 * time.Millisecond,
		Spec: envs.Spec{Settings: map[string]string{service.SettingTask: task}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, task
}

// inTask runs a shell command in the task's container, outside runbox.
func inTask(t *testing.T, task, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "docker exec $(docker ps -q --filter label=io.runbox.task="+task+") sh -c '"+script+"'").CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %q: %v: %s", script, err, out)
	}
	return string(out)
}

// TestSandboxJobs_DockerSession protects background jobs of a docker
// session (see sandboxJobs).
func TestSandboxJobs_DockerSession(t *testing.T) {
	srv, task := dockerJobsServer(t)
	sandboxJobs(t, srv, "/srv/w", func() string { return inTask(t, task, "ps -eo args") })
}

// sandboxJobs is the behaviour a session on a sandbox backend promises
// for its background jobs: a job runs in the session's own sandbox (it
// reads what a foreground command wrote there and starts where that
// command ended), its completion reaches the client exactly once with its
// output, and list, poll, log, wait, write/submit (gated), close and kill
// act on the sandbox's job; the session's end kills its session-lifetime
// jobs there. dir is a directory the sandbox's commands may make; ps
// lists the command lines running in the sandbox, seen from outside
// runbox.
func sandboxJobs(t *testing.T, srv *server.Server, dir string, ps func() string) {
	t.Helper()
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})

	mustOK(t, cs, "terminal", map[string]any{"command": "mkdir -p " + dir + " && cd " + dir + " && echo from-the-session > marker"})
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "pwd; cat marker; echo last line; exit 3", "background": true, "notify_on_complete": true})
	id, _ := out["session_id"].(string)
	if id == "" || out["dir"] != dir {
		t.Fatalf("background start = %v; want a job in %s", out, dir)
	}
	testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	nt := n.of(id, "completion")[0]
	if want := "[background job " + id + " completed: exit 3]"; !strings.HasPrefix(nt.Message, want) ||
		!strings.Contains(nt.Message, dir+"\nfrom-the-session\nlast line") {
		t.Errorf("notice = %q; want it to start %q and carry the job's output", nt.Message, want)
	}

	// A second job: once its completion is here, a second delivery of the
	// first would have arrived before it.
	cat, _ := mustOK(t, cs, "terminal", map[string]any{"command": "cat", "background": true, "notify_on_complete": true})
	catID := cat["session_id"].(string)
	list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if jobs, _ := list["jobs"].([]any); len(jobs) != 2 {
		t.Errorf("list = %v; want the session's two jobs", list)
	}
	mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": catID, "data": "echo hello"})
	res := call(t, cs, "process", map[string]any{"action": "submit", "session_id": catID, "data": "rm -rf --no-preserve-root /"})
	if !res.IsError || structured(t, res)["hardline"] != true {
		t.Errorf("submitting a hardline line: %s; want refused by the gate", text(res))
	}
	mustOK(t, cs, "process", map[string]any{"action": "write", "session_id": catID, "data": "partial"})
	mustOK(t, cs, "process", map[string]any{"action": "close", "session_id": catID})
	w, _ := mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": catID, "timeout": 60})
	if w["done"] != true {
		t.Fatalf("wait = %v; want done", w)
	}
	log, _ := mustOK(t, cs, "process", map[string]any{"action": "log", "session_id": catID})
	if log["output"] != "echo hello\npartial" {
		t.Errorf("the job read %q; want the allowed lines only", log["output"])
	}
	p, _ := mustOK(t, cs, "process", map[string]any{"action": "poll", "session_id": catID[:6]})
	if p["id"] != catID || p["status"] != "exited" {
		t.Errorf("poll by prefix = %v; want the exited job", p)
	}
	testwait.Until(t, "the second completion notice", func() bool { return len(n.of(catID, "completion")) > 0 })
	if got := len(n.of(id, "completion")); got != 1 {
		t.Errorf("the first job's completion arrived %d times; want once", got)
	}

	sleeper, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 711", "background": true})
	k, txt := mustOK(t, cs, "process", map[string]any{"action": "kill", "session_id": sleeper["session_id"]})
	if k["outcome"] != "killed" || !strings.Contains(txt, "killed") {
		t.Errorf("kill = %v, %q", k, txt)
	}
	if ps := ps(); strings.Contains(ps, "sleep 711") {
		t.Errorf("the killed job still runs in the container:\n%s", ps)
	}

	// The session's end kills what it left running, in the container
	// that outlives it.
	mustOK(t, cs, "terminal", map[string]any{"command": "sleep 712", "background": true})
	if ps := ps(); !strings.Contains(ps, "sleep 712") {
		t.Fatalf("the job is not running in the task's container:\n%s", ps)
	}
	cs.Close()
	testwait.Until(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	if ps := ps(); strings.Contains(ps, "sleep 712") {
		t.Errorf("the session's job outlived the session:\n%s", ps)
	}
}

// TestSandboxJobs_SSHSession: the same for a session on an ssh host (an
// sshd in a container of its own, so the job daemon the session starts
// there, and every job, go with it): the jobs run in the job daemon on the
// session's host, reached through its agent channel.
func TestSandboxJobs_SSHSession(t *testing.T) {
	d := sshtest.StartContainer(t)
	cfg := config.Default()
	cfg.SSH.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := server.New(server.Options{
		Service: svc, Backend: "ssh", Redeliver: 50 * time.Millisecond,
		Spec: envs.Spec{Host: d.Target(), Settings: map[string]string{"identity": d.UserKey, "accept_new_host_key": "true"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	sandboxJobs(t, srv, "/srv/w", func() string {
		out, err := exec.Command("docker", "exec", d.Container, "ps", "-eo", "args").CombinedOutput()
		if err != nil {
			t.Fatalf("ps on the ssh host: %v: %s", err, out)
		}
		return string(out)
	})
}

// TestSandboxJobs_DockerOwners protects owner isolation inside a shared
// container: two sessions on one task share its job daemon, yet neither
// sees the other's jobs through the process tool, and a command of the
// second session that asks the daemon directly (runbox ps in the
// container) does not see the first session's job either. The control:
// the same command lists a job started in the container without a token,
// so the command does reach the daemon.
func TestSandboxJobs_DockerOwners(t *testing.T) {
	srv, _ := dockerJobsServer(t)
	a := connect(t, srv, nil)
	b := connect(t, srv, nil)
	out, _ := mustOK(t, a, "terminal", map[string]any{"command": "sleep 713", "background": true})
	id := out["session_id"].(string)

	if list, _ := mustOK(t, b, "process", map[string]any{"action": "list"}); len(list["jobs"].([]any)) != 0 {
		t.Errorf("the other session lists %v; want none", list["jobs"])
	}
	if res := call(t, b, "process", map[string]any{"action": "kill", "session_id": id}); !res.IsError {
		t.Errorf("the other session killed the job: %s", text(res))
	}
	// b needs a job of its own before it has a view of the daemon at all.
	mustOK(t, b, "terminal", map[string]any{"command": "true", "background": true})
	if res := call(t, b, "process", map[string]any{"action": "kill", "session_id": id}); !res.IsError {
		t.Errorf("the other session killed the job: %s", text(res))
	}

	const cli = "/.runbox/runbox"
	started, _ := mustOK(t, b, "terminal", map[string]any{"command": cli + " start -- sleep 714"})
	own := strings.TrimSpace(started["output"].(string))
	ps, _ := mustOK(t, b, "terminal", map[string]any{"command": cli + " ps -a 2>&1"})
	got := ps["output"].(string)
	if own == "" || !strings.Contains(got, own) {
		t.Fatalf("control: runbox ps in the container does not list a job started there without a token (%q):\n%s", own, got)
	}
	if strings.Contains(got, id) || strings.Contains(got, "sleep 713") {
		t.Errorf("a command of another session lists the session's job:\n%s", got)
	}
	kill := call(t, b, "terminal", map[string]any{"command": cli + " kill " + id + " 2>&1"})
	if st := structured(t, kill); st["exit_code"] == 0.0 {
		t.Errorf("a command of another session killed the session's job: %s", text(kill))
	}
	if k := call(t, b, "terminal", map[string]any{"command": cli + " kill " + own}); structured(t, k)["exit_code"] != 0.0 {
		t.Errorf("control: runbox kill in the container could not kill the job it started: %s", text(k))
	}
	if p, _ := mustOK(t, a, "process", map[string]any{"action": "poll", "session_id": id}); p["status"] != "running" {
		t.Errorf("the session's job after another session's command tried to kill it: %v; want running", p)
	}
}

// TestSandboxJobs_DockerGateFirst: the gate judges a docker session's
// background command before anything is reached: a refused command opens
// no container and starts no job daemon. The control: an allowed one, in
// a fresh session, does open the task's container.
func TestSandboxJobs_DockerGateFirst(t *testing.T) {
	srv, task := dockerJobsServer(t)
	containers := func() string {
		out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=io.runbox.task="+task).Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	cs := connect(t, srv, nil)
	res := call(t, cs, "terminal", map[string]any{"command": "rm -rf --no-preserve-root /", "background": true})
	if !res.IsError || structured(t, res)["hardline"] != true {
		t.Fatalf("a hardline background command: %s; want refused by the gate", text(res))
	}
	if c := containers(); c != "" {
		t.Errorf("a refused background command opened container %s", c)
	}
	mustOK(t, cs, "terminal", map[string]any{"command": "true", "background": true})
	if containers() == "" {
		t.Fatal("control: an allowed background command opened no container")
	}
}

// fakeSandboxes is what a test of sessions on a loopback cloud backend
// (the fake Modal, the fake Daytona: sandboxes are directories of this
// machine with real processes) needs: short directories (a job daemon's
// socket lives under a sandbox's), the agent built once, and the job
// daemons that the sandboxes' runbox CLI started detached stopped when
// the test ends.
type fakeSandboxes struct {
	root     string // sandboxes live in root/s
	agent    string // the static agent build
	agentDir string // where the agent and the CLI go in a sandbox
}

func newFakeSandboxes(t *testing.T) *fakeSandboxes {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the agent and the runbox CLI")
	}
	root, err := os.MkdirTemp("", "rbm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f := &fakeSandboxes{root: root, agent: filepath.Join(root, "runbox-agent"), agentDir: filepath.Join(root, "a")}
	if err := testproc.BuildAgent(f.agent); err != nil {
		t.Fatal(err)
	}
	// Registered before the fake and the service, so it runs after them.
	t.Cleanup(func() {
		clis, _ := filepath.Glob(filepath.Join(f.agentDir, "runbox-*"))
		for _, c := range clis {
			testproc.StopDaemons(c)
		}
	})
	return f
}

// server is a server whose sessions are on backend, opened by a service
// with cfg and the launch environment launch.
func (f *fakeSandboxes) server(t *testing.T, backend string, cfg config.Config, launch map[string]string) *server.Server {
	t.Helper()
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(k string) string { return launch[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := server.New(server.Options{Service: svc, Backend: backend, Redeliver: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// ps lists the command lines running in the fake's sandboxes.
func (f *fakeSandboxes) ps(t *testing.T) func() string {
	return func() string { return argsUnder(t, filepath.Join(f.root, "s")) }
}

// TestSandboxJobs_ModalSession: sandboxJobs and yield for a session in a Modal
// sandbox (the fake Modal): the runbox CLI is put in the sandbox by the
// first job command, and the jobs run in the job daemon it starts there
// (its state under the sandbox's HOME).
func TestSandboxJobs_ModalSession(t *testing.T) {
	f := newFakeSandboxes(t)
	const id, secret = "ak-jobs", "as-jobs-0b1c2d3e"
	fm, err := modaltest.Start(modaltest.Config{TokenID: id, TokenSecret: secret, Dir: filepath.Join(f.root, "s")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Stop)
	t.Setenv("MODAL_SERVER_URL", fm.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(f.root, "none.toml"))
	cfg := config.Default()
	cfg.Modal.AgentBinary, cfg.Modal.AgentDir = f.agent, f.agentDir
	srv := f.server(t, "modal", cfg, map[string]string{"MODAL_TOKEN_ID": id, "MODAL_TOKEN_SECRET": secret,
		"MODAL_SERVER_URL": fm.URL(), "MODAL_CONFIG_PATH": filepath.Join(f.root, "none.toml")})
	fakeSessionJobs(t, srv, f)
}

// fakeSessionJobs runs the sandbox-job behaviour, then the yield
// promises (see yield_test.go), on sessions of srv.
func fakeSessionJobs(t *testing.T, srv *server.Server, f *fakeSandboxes) {
	t.Run("jobs", func(t *testing.T) { sandboxJobs(t, srv, filepath.Join(f.root, "w"), f.ps(t)) })
	t.Run("yield still running", func(t *testing.T) { yieldStillRunning(t, srv) })
	t.Run("yield finished first", func(t *testing.T) { yieldFinishedFirst(t, srv) })
	t.Run("submit with a yield", func(t *testing.T) { submitYield(t, srv) })
}

// daytonaServer is a server whose sessions are in sandboxes of a fake
// Daytona, with the agent, or with no_agent (toolbox sessions only).
func daytonaServer(t *testing.T, f *fakeSandboxes, noAgent bool) *server.Server {
	t.Helper()
	const key = "dtn-jobs-key-5a7c"
	fd := daytonatest.New(key, filepath.Join(f.root, "s"))
	t.Cleanup(fd.Close)
	cfg := config.Default()
	cfg.Daytona.AgentBinary, cfg.Daytona.AgentDir, cfg.Daytona.NoAgent = f.agent, f.agentDir, noAgent
	return f.server(t, "daytona", cfg, map[string]string{"DAYTONA_API_KEY": key, "DAYTONA_API_URL": fd.APIURL})
}

// TestSandboxJobs_DaytonaSession: the same for a session in a Daytona
// sandbox (the fake Daytona, through the official SDK): the agent runs
// over a toolbox PTY session, the CLI is uploaded by the first job
// command, and the jobs run in the daemon it starts in the sandbox.
func TestSandboxJobs_DaytonaSession(t *testing.T) {
	f := newFakeSandboxes(t)
	fakeSessionJobs(t, daytonaServer(t, f, false), f)
}

// TestSandboxJobs_DaytonaNoAgentRefused: a daytona session without the
// agent (no_agent: each command in a toolbox session) has no runbox CLI
// to hold the job daemon, so a background start is refused and says why;
// nothing of it runs. The control: a foreground command in the same
// session runs.
func TestSandboxJobs_DaytonaNoAgentRefused(t *testing.T) {
	f := newFakeSandboxes(t)
	cs := connect(t, daytonaServer(t, f, true), nil)
	fg, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo in-the-sandbox"})
	if !strings.Contains(fmt.Sprint(fg["output"]), "in-the-sandbox") {
		t.Fatalf("control: a foreground command in the no_agent session: %v", fg)
	}
	res := call(t, cs, "terminal", map[string]any{"command": "sleep 715", "background": true})
	msg := text(res)
	if !res.IsError || !strings.Contains(msg, "background jobs are not available") || !strings.Contains(msg, "without the runbox agent") {
		t.Fatalf("background start without the agent: %q; want a refusal saying the agent is not there", msg)
	}
	if ps := f.ps(t)(); strings.Contains(ps, "sleep 715") {
		t.Errorf("the refused job runs in the sandbox:\n%s", ps)
	}
}

// argsUnder lists the command lines of the processes of this machine
// whose HOME is under dir: those of the fake's sandboxes.
func argsUnder(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if strings.HasPrefix(kv, "HOME="+dir+"/") {
				args, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				b.WriteString(strings.ReplaceAll(strings.TrimRight(string(args), "\x00"), "\x00", " ") + "\n")
				break
			}
		}
	}
	return b.String()
}

// TestSandboxJobs_RefusedWithReason: a background start in a session
// whose sandbox cannot hold runbox's job daemon says that background jobs
// are not available there and why; nothing is started (no sandbox is
// made: the refusal comes first, so no credentials are needed).
func TestSandboxJobs_RefusedWithReason(t *testing.T) {
	for _, tc := range []struct{ backend, why string }{
		{"singularity", "backend singularity"},
		{"vercel", "backend vercel"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			srv, err := server.New(server.Options{Service: newService(t), Backend: tc.backend})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			cs := connect(t, srv, nil)
			res := call(t, cs, "terminal", map[string]any{"command": "sleep 1", "background": true})
			msg := text(res)
			if !res.IsError || !strings.Contains(msg, "background jobs are not available") || !strings.Contains(msg, tc.why) {
				t.Fatalf("background start on %s: %q; want a refusal saying %q", tc.backend, msg, tc.why)
			}
			if st := structured(t, res); st["kind"] != "unsupported" {
				t.Errorf("refusal kind = %v; want unsupported", st["kind"])
			}
		})
	}
}
