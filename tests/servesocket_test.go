package tests

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSandbox_ServeSocketRefusesCommands protects the promise that
// runbox serve --socket serves no sandboxed command. A command's connect
// to a Unix socket is made by runbox on its behalf, so the server's
// check of its peer's confinement sees runbox, not the command: a
// command that reached a socket put in its own workspace opened a
// session there and answered its own questions. The socket now lives in
// runbox's state directory, with a link at the path asked for, and the
// sandbox refuses the connect by the socket's real place. As root and
// as an unprivileged user, the gate out of the way; the control: the
// same curl unconfined is served.
func TestSandbox_ServeSocketRefusesCommands(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, _ := sandboxDirs(t, u)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sock := filepath.Join(mkdirOwned(t, u, filepath.Join(home, "run")), "mcp.sock")
			serve := u.command(ctx, env, "serve", "--socket", sock)
			serve.Dir = ws
			stderr, err := serve.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := serve.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { serve.Process.Kill(); serve.Wait() }()
			ready := false
			for sc := bufio.NewScanner(stderr); sc.Scan(); {
				if strings.Contains(sc.Text(), "serving MCP on unix socket") {
					ready = true
					break
				}
			}
			if !ready {
				t.Fatal("runbox serve --socket never said it was serving")
			}
			curl := `curl -s -o /dev/null -w '[%{http_code}]' --unix-socket ` + sock + ` -X POST -H 'Content-Type: application/json' ` +
				`-H 'Accept: application/json, text/event-stream' --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":` +
				`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' http://localhost/mcp`
			run := yoloRunner(t, u, env, ws)
			if got := run("--sandbox", "off", "run", "--", curl); !strings.Contains(got, "[200]") {
				t.Fatalf("the control (unconfined curl) got %q: the server is not there to reach", got)
			}
			if got := run("run", "--", curl); strings.Contains(got, "[200]") {
				t.Errorf("a confined command opened a session of runbox serve --socket: %s", got)
			}
		})
	}
}

// TestServe_SocketInTheWorkspaceRefused: runbox serve --socket refuses a
// path sandboxed commands could write: the link it puts there could be
// replaced by a command's own socket, which would then take the client's
// requests, and a directory on the way could be a link a command planted,
// steering the link and its removal outside the workspace. Neither the
// path nor the place a planted link points to is touched. As root and as
// an unprivileged user.
func TestServe_SocketInTheWorkspaceRefused(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			victim := filepath.Join(outside, "y.sock")
			writeOwned(t, u, victim, "the user's file\n", 0o644)
			run := yoloRunner(t, u, env, ws)
			run("run", "--", "mkdir -p pd && ln -s "+outside+" pd/link")
			for _, path := range []string{filepath.Join(ws, "mcp.sock"), filepath.Join(ws, "pd", "link", "y.sock")} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				serve := u.command(ctx, env, "serve", "--socket", path)
				serve.Dir = ws
				out, err := serve.CombinedOutput()
				cancel()
				if err == nil || !strings.Contains(string(out), "sandboxed commands can write") {
					t.Errorf("serve --socket %s: %v %q; want a refusal saying why", path, err, out)
				}
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "the user's file\n" {
				t.Errorf("the file a planted link points at was changed: %q %v", b, err)
			}
		})
	}
}
