package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/supervisor"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
)

// The test binary also plays a background job's supervisor, as
// `runbox __supervise` does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__supervise" {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	// It confines local commands too, as `runbox __confine` does.
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// testJobs is a real job registry served on a private socket, as the
// per-user job daemon serves it, with this test binary as the supervisor.
type testJobs struct {
	reg    *procregistry.Registry
	client *procregistry.Client
}

func newTestJobs(t *testing.T) *testJobs {
	t.Helper()
	// A short directory: Unix socket paths are limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "rbs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env, err := local.New(local.Options{
		Confine:       confine.Off(),
		BaseEnv:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C", "GORACE=atexit_sleep_ms=0"},
		Grace:         local.NoGrace,
		NoContainment: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := procregistry.Open(procregistry.Options{
		Dir: filepath.Join(dir, "state"), Env: env, Supervisor: []string{exe, "__supervise"},
		Grace: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond, MinHeartbeat: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, in := range reg.List("") {
			if !in.Status.Finished() {
				reg.Kill(context.Background(), in.ID)
			}
		}
		reg.Close()
	})
	sock := filepath.Join(dir, "run", "d.sock")
	ln, err := procregistry.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { (&procregistry.Server{Reg: reg}).Serve(ctx, ln) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &testJobs{reg: reg, client: &procregistry.Client{Path: sock}}
}

// newService is a service with the default policy that reads nothing
// of the developer's own configuration, its local commands unconfined by
// choice: the server's own behaviour is tested here; serve as shipped,
// confined, is tested through the binary (cmd/runbox) and in
// sandbox_test.go.
func newService(t *testing.T) *service.Service {
	t.Helper()
	cfg := config.Default()
	cfg.Sandbox.Profile = confine.ProfileOff
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// newServer is a Server with a real job registry; tweak adjusts its
// options.
func newServer(t *testing.T, tweak func(*server.Options)) (*server.Server, *testJobs) {
	t.Helper()
	jobs := newTestJobs(t)
	opts := server.Options{
		Service:   newService(t),
		Jobs:      func(context.Context) (service.SessionJobs, error) { return jobs.client, nil },
		JobDir:    t.TempDir(),
		Redeliver: 50 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, jobs
}

// connect opens a client session to srv over an in-memory transport.
func connect(t *testing.T, srv *server.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := tryConnect(t, srv, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func tryConnect(t *testing.T, srv *server.Server, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

// call calls a tool and returns the result; a protocol error fails the
// test (tool errors are results with IsError). The bound only catches a
// hang: a loaded machine has taken over a minute for a docker session's
// first job (its container, then the job daemon inside).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return res
}

// mustOK calls a tool that must succeed and decodes its structured
// content into a map.
func mustOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", tool, args, text(res))
	}
	return structured(t, res), text(res)
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
