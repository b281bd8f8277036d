package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
)

// TestSandbox_ClientCanTightenNeverLoosen protects the per-session
// profile: a client may ask for a stricter sandbox for its own session
// (read-only: its write in the workspace fails) but a request for a looser
// one (off) is ignored — the session keeps the server's workspace
// profile, and its write outside the workspace still fails. Every result
// says the profile in force.
func TestSandbox_ClientCanTightenNeverLoosen(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, outside := t.TempDir(), t.TempDir()
	// In a script, so that only the sandbox stands between the command
	// and the files (the gate would refuse the writes up front).
	script := "echo in > " + filepath.Join(ws, "in.txt") + "; echo out > " + filepath.Join(outside, "out.txt") + "; true\n"
	if err := os.WriteFile(filepath.Join(ws, "w.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		asked, want     string
		inside, outside bool
	}{
		{"", "workspace", true, false},
		{"read-only", "read-only", false, false},
		{"off", "workspace", true, false},
	} {
		t.Run("asked="+tc.asked, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "in.txt"))
			os.Remove(filepath.Join(outside, "out.txt"))
			svc, err := service.New(service.Options{
				Config:   config.Default(),
				Getenv:   func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] },
				Confiner: []string{exe, confine.Command},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close(context.Background()) })
			srv, _ := newServer(t, func(o *server.Options) {
				o.Service = svc
				o.Spec = envs.Spec{Dir: ws}
			})
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			if tc.asked != "" {
				client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if p, ok := req.GetParams().(*mcp.InitializeParams); ok {
							p.Meta = mcp.Meta{server.MetaSandbox: tc.asked}
						}
						return next(ctx, method, req)
					}
				})
			}
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.MCP().Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			cs, err := client.Connect(t.Context(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			res := call(t, cs, "terminal", map[string]any{"command": "bash ./w.sh"})
			if got := structured(t, res)["sandbox"]; got != tc.want {
				t.Errorf("sandbox %v, want %s", got, tc.want)
			}
			_, inErr := os.Stat(filepath.Join(ws, "in.txt"))
			_, outErr := os.Stat(filepath.Join(outside, "out.txt"))
			if (inErr == nil) != tc.inside || (outErr == nil) != tc.outside {
				t.Errorf("wrote inside %v (want %v), outside %v (want %v)", inErr == nil, tc.inside, outErr == nil, tc.outside)
			}
		})
	}
}
