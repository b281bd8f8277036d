package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
)

// TestLifetime_SessionEnd protects issue 29's lifetime classes through a
// stock client: at the session's end a session job is killed, detached
// and keep-awake jobs run on, and a class changed while the job runs
// (the process tool's lifetime action) is the one that counts.
func TestLifetime_SessionEnd(t *testing.T) {
	srv, jobs := newServer(t, nil)
	cs := connect(t, srv, nil)
	start := func(args map[string]any) string {
		t.Helper()
		args["command"], args["background"] = "sleep 600", true
		out, _ := mustOK(t, cs, "terminal", args)
		return out["session_id"].(string)
	}
	cases := []struct {
		name   string
		id     string
		change string // a later lifetime action, if any
		killed bool
	}{
		{name: "session (default)", id: start(map[string]any{}), killed: true},
		{name: "session", id: start(map[string]any{"lifetime": "session"}), killed: true},
		{name: "detached", id: start(map[string]any{"lifetime": "detached"})},
		{name: "detach flag", id: start(map[string]any{"detach": true})},
		{name: "keep-awake", id: start(map[string]any{"lifetime": "keep-awake"})},
		{name: "session made detached", id: start(map[string]any{}), change: "detached"},
		{name: "detached made session's", id: start(map[string]any{"lifetime": "detached"}), change: "session", killed: true},
	}
	for _, c := range cases {
		if c.change == "" {
			continue
		}
		out, txt := mustOK(t, cs, "process", map[string]any{"action": "lifetime", "session_id": c.id, "lifetime": c.change})
		if out["lifetime"] != c.change || !strings.Contains(txt, c.change) {
			t.Errorf("%s: lifetime action = %v, %q", c.name, out, txt)
		}
	}
	list, txt := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if !strings.Contains(txt, "keep-awake") || !strings.Contains(txt, "detached") || len(list["jobs"].([]any)) != len(cases) {
		t.Errorf("list = %q; want every job with its lifetime", txt)
	}
	cs.Close()
	testwait.Until(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	for _, c := range cases {
		in, err := jobs.reg.Get(c.id)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := in.KilledBy == "session-end"; got != c.killed || (!c.killed && in.Status.Finished()) {
			t.Errorf("%s: after the session ended: %s (killed by %q); want killed %v", c.name, in.Status, in.KilledBy, c.killed)
		}
		if !c.killed {
			jobs.reg.Kill(context.Background(), c.id)
		}
	}
}

// TestLifetime_BadArgs: a class a job cannot have, or one given where no
// job is started, is refused with the reason.
func TestLifetime_BadArgs(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 600", "background": true})
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"terminal", map[string]any{"command": "true", "background": true, "lifetime": "forever"}, "forever"},
		{"terminal", map[string]any{"command": "true", "background": true, "lifetime": "command"}, "foreground"},
		{"terminal", map[string]any{"command": "true", "lifetime": "detached"}, "background"},
		{"terminal", map[string]any{"command": "true", "background": true, "detach": true, "lifetime": "session"}, "disagree"},
		{"process", map[string]any{"action": "lifetime", "session_id": job["session_id"], "lifetime": "command"}, "foreground"},
		{"process", map[string]any{"action": "lifetime", "session_id": "nosuchjob", "lifetime": "detached"}, "not found"},
	} {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s(%v) = %q (error %v); want an error naming %q", c.tool, c.args, text(res), res.IsError, c.want)
		}
	}
	// A foreground command may name its own class.
	if out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo hi", "lifetime": "command"}); out["output"] != "hi\n" {
		t.Errorf("foreground with lifetime command: %v", out)
	}
}

// TestLifetime_KeepAwakeHoldsIdleSession protects keep-awake: an HTTP
// session whose client vanished is closed after its idle time, unless a
// keep-awake job runs in it; it is then kept, idle time after idle time,
// until that job ends. The control is the same session shape with a
// session job: closed at the first idle check.
func TestLifetime_KeepAwakeHoldsIdleSession(t *testing.T) {
	for _, c := range keepAwakeCases {
		t.Run(c.lifetime, func(t *testing.T) {
			kept := newKeptSignal()
			srv, jobs := newServer(t, func(o *server.Options) { o.Logger = slog.New(kept) })
			cs, vanish := vanishingClient(t, srv)
			job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 600", "background": true, "lifetime": c.lifetime})
			id := job["session_id"].(string)
			vanish()
			if !c.kept {
				testwait.Until(t, "the idle session to close", func() bool { return srv.Sessions() == 0 })
				if in, _ := jobs.reg.Get(id); in.KilledBy != "session-end" {
					t.Errorf("the session job of a closed session: %+v; want killed by session-end", in)
				}
				return
			}
			keptThrice(t, srv, kept)
			if _, err := jobs.reg.Kill(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "the session to close once its keep-awake job ended", func() bool { return srv.Sessions() == 0 })
		})
	}
}

// TestLifetime_KeepAwakeHoldsPooledContainer: the same with a docker
// session whose container came from the warm pool, its job inside that
// container: while the keep-awake job runs, the idle session and its
// container are kept; once it ends, both go. The control: a session job,
// and the container goes at the first idle check.
func TestLifetime_KeepAwakeHoldsPooledContainer(t *testing.T) {
	needDocker(t)
	for _, c := range keepAwakeCases {
		t.Run(c.lifetime, func(t *testing.T) {
			cfg := config.Default()
			cfg.Docker.Image, cfg.Docker.Pool = syncImage, 1
			svc, err := service.New(service.Options{Config: cfg, WarmPool: true, Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close(context.Background()) })
			kept := newKeptSignal()
			srv, err := server.New(server.Options{Service: svc, Backend: "docker", Redeliver: 50 * time.Millisecond, Logger: slog.New(kept)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			cs, vanish := vanishingClient(t, srv)
			out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "hostname"})
			container := strings.TrimSpace(out["output"].(string))
			exists := func() bool { return exec.Command("docker", "inspect", container).Run() == nil }
			if !exists() {
				t.Fatalf("the session's container %q is not one docker knows", container)
			}
			mustOK(t, cs, "terminal", map[string]any{"command": "sleep 600", "background": true, "lifetime": c.lifetime})
			vanish()
			if !c.kept {
				testwait.Until(t, "the idle session's container to go", func() bool { return srv.Sessions() == 0 && !exists() })
				return
			}
			keptThrice(t, srv, kept)
			if !exists() {
				t.Fatal("the container of a session kept awake is gone")
			}
			if out, err := exec.Command("docker", "exec", container, "pkill", "-f", "sleep 600").CombinedOutput(); err != nil {
				t.Fatalf("ending the job: %v: %s", err, out)
			}
			testwait.Until(t, "the session and its container to go once the keep-awake job ended", func() bool { return srv.Sessions() == 0 && !exists() })
		})
	}
}

// keepAwakeCases: a keep-awake job keeps its idle session, a session job
// (the control) does not.
var keepAwakeCases = []struct {
	lifetime string
	kept     bool
}{
	{"keep-awake", true},
	{"session", false},
}

func newKeptSignal() *logSignal {
	return &logSignal{msg: "server: an idle session is kept", ch: make(chan struct{}, 16)}
}

// vanishingClient connects to srv over HTTP (sessions idle after 2 s
// without a request: long enough for a loaded machine between a test's
// calls); vanish makes the client disappear without ending its session,
// as a crashed agent would.
func vanishingClient(t *testing.T, srv *server.Server) (cs *mcp.ClientSession, vanish func()) {
	t.Helper()
	url := serveURL(t, srv, server.HTTPOptions{SessionIdle: 2 * time.Second})
	gone, vanish := context.WithCancel(context.Background())
	t.Cleanup(vanish)
	hc := &http.Client{Transport: vanishing{gone, http.DefaultTransport}}
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vanishing", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, vanish
}

// keptThrice waits for three idle checks that kept srv's one session.
func keptThrice(t *testing.T, srv *server.Server, kept *logSignal) {
	t.Helper()
	for range 3 {
		select {
		case <-kept.ch:
		case <-time.After(60 * time.Second):
			t.Fatalf("no idle check kept the session (sessions: %d)", srv.Sessions())
		}
	}
	if srv.Sessions() != 1 {
		t.Fatalf("sessions = %d while the keep-awake job runs; want 1", srv.Sessions())
	}
}

// logSignal is a slog handler that signals each record whose message
// begins with msg, and drops the rest.
type logSignal struct {
	msg string
	ch  chan struct{}
}

func (h *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logSignal) WithGroup(string) slog.Handler            { return h }
func (h *logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// TestLifetime_YieldCallerGone: until its yield passes, a command given
// one is of class command: a call the client cancels before then takes
// the job along, as it would a foreground command, and the session is
// told by its completion notice. The control is the same command not
// cancelled: it yields and runs on as the session's job.
func TestLifetime_YieldCallerGone(t *testing.T) {
	srv, jobs := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	n := &notices{}
	cs := connectHTTP(t, url, http.DefaultClient, false, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	running := func() []procregistry.Info {
		var out []procregistry.Info
		for _, in := range jobs.reg.List("") {
			if !in.Status.Finished() {
				out = append(out, in)
			}
		}
		return out
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "sleep 600", "yield": 600}})
		done <- err
	}()
	testwait.Until(t, "the yielding command's job", func() bool { return len(running()) == 1 })
	id := running()[0].ID
	if l := running()[0].Lifetime; l != procregistry.LifetimeCommand {
		t.Errorf("before its yield the job's class is %q; want command", l)
	}
	cancel()
	<-done
	testwait.Until(t, "the job to end with its cancelled call", func() bool {
		in, _ := jobs.reg.Get(id)
		return in.Status.Finished()
	})
	testwait.Until(t, "its completion notice", func() bool { return len(n.of(id, "completion")) == 1 })

	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 600", "yield": 0.2, "lifetime": "detached"})
	in, err := jobs.reg.Get(out["session_id"].(string))
	if err != nil || in.Status.Finished() || in.Lifetime != procregistry.LifetimeDetached {
		t.Errorf("a command that yielded: %+v, %v; want running, detached as asked", in, err)
	}
	jobs.reg.Kill(context.Background(), in.ID)
}
