package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/runbox/runbox/internal/testproc"
)

// serveAttack is a workspace holding a script the gate cannot see into
// (it reads its targets from files), a secret in the home directory, a
// victim file outside the workspace and a daemon's unix socket outside
// it that anyone may connect to.
type serveAttack struct {
	ws, victim, key, daemon string
}

func newServeAttack(t *testing.T) serveAttack {
	t.Helper()
	a := serveAttack{ws: t.TempDir(), victim: filepath.Join(t.TempDir(), "victim")}
	a.key = filepath.Join(a.ws, ".ssh", "id_ed25519") // HOME is the workspace
	a.daemon = filepath.Join(t.TempDir(), "daemon.sock")
	testproc.ServeUnix(t, a.daemon)
	files := map[string]string{
		a.victim:                      "ORIGINAL",
		a.key:                         "KEY-CANARY",
		filepath.Join(a.ws, "target"): a.victim,
		filepath.Join(a.ws, "secret"): a.key,
		filepath.Join(a.ws, "daemon"): a.daemon,
		filepath.Join(a.ws, "attack.sh"): "echo STARTED; echo PWNED > \"$(cat target)\"; cat \"$(cat secret)\"\n" +
			"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect(open('daemon').read()); print('DAEMON-' + s.recv(5).decode())\" 2>/dev/null; true\n",
		filepath.Join(a.ws, ".gitignore"): "",
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// serveCommand is `runbox serve ARGS` as a user starts it: this binary
// as runbox, in the workspace, with a HOME of the test's own.
func serveCommand(t *testing.T, a serveAttack, args ...string) *exec.Cmd {
	env := jobsEnv(t)
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Dir = a.ws
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG=", "HOME="+a.ws,
		"RUNBOX_STATE_DIR="+env["RUNBOX_STATE_DIR"], "RUNBOX_OWNER="+env["RUNBOX_OWNER"])
	return cmd
}

// checkAttack runs the attack through the terminal tool and says what it
// did: whether it ran at all, wrote the victim, read the key, reached the
// daemon, and the sandbox the result names.
func checkAttack(ctx context.Context, t *testing.T, cs *mcp.ClientSession, a serveAttack) (wrote, read, reached bool, sandbox string, violations string) {
	t.Helper()
	os.WriteFile(a.victim, []byte("ORIGINAL"), 0o644)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "sh attack.sh"}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Output     string          `json:"output"`
		Sandbox    string          `json:"sandbox"`
		Violations json.RawMessage `json:"sandbox_violations"`
	}
	json.Unmarshal(b, &out)
	if !strings.Contains(out.Output, "STARTED") {
		t.Fatalf("the attack did not run (so it proves nothing): %s", b)
	}
	v, _ := os.ReadFile(a.victim)
	return string(v) != "ORIGINAL", strings.Contains(out.Output, "KEY-CANARY"), strings.Contains(out.Output, "DAEMON-"+testproc.Greeting), out.Sandbox, string(out.Violations)
}

// TestServe_ConfinedByDefault: `runbox serve` as shipped, with default
// flags, over stdio and over HTTP with the official SDK's client, runs
// every local command under the workspace profile: a script that writes
// outside the workspace, reads an ssh key and connects to a daemon's unix
// socket does none of it, the result
// names the profile, and serve says the profile when it starts. With
// --sandbox off (the control) the same script does both.
func TestServe_ConfinedByDefault(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, off := range []bool{false, true} {
			name := transport + map[bool]string{false: "/default", true: "/off"}[off]
			t.Run(name, func(t *testing.T) {
				a := newServeAttack(t)
				var args []string
				if off {
					args = append(args, "--sandbox", "off")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				cs, stderr := connectServe(ctx, t, transport, serveCommand(t, a, args...))
				wrote, read, reached, sandbox, violations := checkAttack(ctx, t, cs, a)
				announced := regexp.MustCompile(`runbox: sandbox (\S+)`).FindStringSubmatch(stderr())
				if off {
					if !wrote || !read || !reached || sandbox != "off" {
						t.Fatalf("control (--sandbox off): wrote %v, read %v, reached the daemon %v, sandbox %q; want all three, off", wrote, read, reached, sandbox)
					}
					if announced == nil || announced[1] != "off:" {
						t.Errorf("serve did not say it runs unconfined: %s", stderr())
					}
					return
				}
				if wrote || read || reached || sandbox != "workspace" {
					t.Fatalf("default serve: wrote %v, read %v, reached the daemon %v, sandbox %q; want none, under workspace", wrote, read, reached, sandbox)
				}
				if !strings.Contains(violations, a.victim) || !strings.Contains(violations, a.daemon) {
					t.Errorf("violations %s do not name the victim %s and the daemon's socket %s", violations, a.victim, a.daemon)
				}
				if announced == nil || announced[1] != "workspace" {
					t.Errorf("serve did not say the profile in force on stderr: %s", stderr())
				}
			})
		}
	}
}

// connectServe starts cmd (a `runbox serve`) and connects the SDK's
// client to it over transport; it returns the session and a reader of
// serve's stderr so far.
func connectServe(ctx context.Context, t *testing.T, transport string, cmd *exec.Cmd) (*mcp.ClientSession, func() string) {
	t.Helper()
	var errb strings.Builder
	lw := &lockedWriter{w: &errb}
	stderr := func() string {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		return errb.String()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	var tr mcp.Transport
	switch transport {
	case "stdio":
		cmd.Stderr = lw
		tr = &mcp.CommandTransport{Command: cmd}
	case "http":
		cmd.Args = append(cmd.Args, "--http", "127.0.0.1:0")
		cmd.Stderr = lw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		url, tok := waitServedAddress(ctx, t, stderr)
		token, err := os.ReadFile(tok)
		if err != nil {
			t.Fatal(err)
		}
		tr = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{string(token)}}}
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v\n%s", transport, err, stderr())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("runbox serve's stderr:\n%s", stderr())
		}
	})
	return cs, stderr
}

// waitServedAddress waits for serve --http to print its address and its
// token file.
func waitServedAddress(ctx context.Context, t *testing.T, stderr func() string) (url, tokFile string) {
	t.Helper()
	urlRe := regexp.MustCompile(`serving MCP at (http://\S+)`)
	tokRe := regexp.MustCompile(`bearer token written to (\S+)`)
	for {
		s := stderr()
		m, tm := urlRe.FindStringSubmatch(s), tokRe.FindStringSubmatch(s)
		if m != nil && tm != nil {
			return m[1], tm[1]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("serve printed no address: %s", s)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", fmt.Sprintf("Bearer %s", strings.TrimSpace(b.token)))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServe_GitLeftoversMadeInert: through `runbox serve` as shipped
// (stdio, default flags), a command plants an embedded repository with a
// core.fsmonitor and adds it as a gitlink (the gate cannot see into the
// script). The tool's result lists a decided "git" violation naming the
// key, and the user's own git status afterwards runs nothing.
func TestServe_GitLeftoversMadeInert(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	a := newServeAttack(t)
	marker := filepath.Join(t.TempDir(), "RAN")
	gitEnv := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+a.ws, "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.invalid", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.invalid")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = a.ws, gitEnv
		cmd.CombinedOutput()
	}
	git("init", "-q")
	git("add", "target")
	git("commit", "-qm", "one")
	// In a directory of its own: with HOME as the workspace, its top
	// holds the steps toward the deny list, where nothing new is made.
	os.WriteFile(filepath.Join(a.ws, "plant.sh"), []byte("export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid\n"+
		"cd src && git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git config core.fsmonitor 'touch "+marker+"' && echo y > x && cd .. && git add sub && echo PLANTED\n"), 0o644)
	os.MkdirAll(filepath.Join(a.ws, "src"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, _ := connectServe(ctx, t, "stdio", serveCommand(t, a))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "sh plant.sh"}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Output     string                              `json:"output"`
		Violations []struct{ Op, Rule, Source string } `json:"sandbox_violations"`
	}
	json.Unmarshal(b, &out)
	if !strings.Contains(out.Output, "PLANTED") {
		t.Fatalf("the command did not plant (so this proves nothing): %s", b)
	}
	found := false
	for _, v := range out.Violations {
		found = found || (v.Op == "git" && v.Rule == "git-config core.fsmonitor" && v.Source == "decided")
	}
	if !found {
		t.Errorf("the result does not list the fsmonitor made inert: %s", b)
	}
	git("status")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the user's git status ran the planted fsmonitor")
	}
}
