package tests

import (
	"bufio"
	"context"
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
			serve := u.command(ctx, env, "serve", "--socket", filepath.Join(ws, "mcp.sock"))
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
			curl := `curl -s -o /dev/null -w '[%{http_code}]' --unix-socket mcp.sock -X POST -H 'Content-Type: application/json' ` +
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
