package server_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// askCommand needs approval under the default policy (it makes a file
// world-writable) and is harmless: it acts on a file of the test's own.
func askCommand(t *testing.T) (cmd, file string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return "chmod 666 " + file + " && echo approved", file
}

func mode(t *testing.T, file string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// elicitor answers elicitations with a fixed result and counts them.
type elicitor struct {
	res   mcp.ElicitResult
	n     atomic.Int32
	mu    sync.Mutex
	asked []string
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.n.Add(1)
	e.mu.Lock()
	e.asked = append(e.asked, req.Params.Message)
	e.mu.Unlock()
	r := e.res
	return &r, nil
}

// TestApproval_Elicited: a command that needs approval is put to the human
// behind the client, once, with the rule's description; the answer
// decides whether it runs, and a refusal names the rule and how to allow
// it.
func TestApproval_Elicited(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  mcp.ElicitResult
		ran  bool
	}{
		{"accept", mcp.ElicitResult{Action: "accept"}, true},
		{"accept once", mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "once"}}, true},
		{"decline", mcp.ElicitResult{Action: "decline"}, false},
		{"cancel", mcp.ElicitResult{Action: "cancel"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t, nil)
			e := &elicitor{res: tc.res}
			cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: e.handle})
			cmd, file := askCommand(t)
			res := call(t, cs, "terminal", map[string]any{"command": cmd})
			if e.n.Load() != 1 {
				t.Fatalf("asked %d times; want once", e.n.Load())
			}
			if q := e.asked[0]; !strings.Contains(q, cmd) || !strings.Contains(q, "chmod-world-writable") {
				t.Errorf("question = %q; want the command and its rule", q)
			}
			if ran := mode(t, file) == 0o666; ran != tc.ran {
				t.Errorf("command ran = %v; want %v", ran, tc.ran)
			}
			if tc.ran {
				if res.IsError || !strings.Contains(text(res), "approved") {
					t.Errorf("approved command: %s", text(res))
				}
				return
			}
			e2 := structured(t, res)
			if !res.IsError || e2["kind"] != "denied" || !strings.Contains(text(res), "approval.allow") {
				t.Errorf("refusal = %s (%v); want a denial with how to allow it", text(res), e2)
			}
			if rules, _ := e2["rules"].([]any); len(rules) == 0 || rules[0] != "chmod-world-writable" {
				t.Errorf("refusal rules = %v; want chmod-world-writable", e2["rules"])
			}
		})
	}
}

// TestApproval_SessionScope: answering "session" allows the rule for the
// rest of the session without asking again; another session still asks.
func TestApproval_SessionScope(t *testing.T) {
	srv, _ := newServer(t, nil)
	e := &elicitor{res: mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "session"}}}
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: e.handle})
	cmd, _ := askCommand(t)
	mustOK(t, cs, "terminal", map[string]any{"command": cmd})
	cmd2, file2 := askCommand(t)
	mustOK(t, cs, "terminal", map[string]any{"command": cmd2})
	if e.n.Load() != 1 || mode(t, file2) != 0o666 {
		t.Errorf("after a session approval: asked %d times, second file mode %v; want 1 and 0666", e.n.Load(), mode(t, file2))
	}
	other := &elicitor{res: mcp.ElicitResult{Action: "decline"}}
	cs2 := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: other.handle})
	cmd3, file3 := askCommand(t)
	if res := call(t, cs2, "terminal", map[string]any{"command": cmd3}); !res.IsError || other.n.Load() != 1 || mode(t, file3) == 0o666 {
		t.Errorf("another session: %s, asked %d; want asked once and refused", text(res), other.n.Load())
	}
}

// TestApproval_WithoutElicitation: a client that cannot be asked gets a
// refusal naming the rule id and how to allow it; nothing runs.
func TestApproval_WithoutElicitation(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	cmd, file := askCommand(t)
	res := call(t, cs, "terminal", map[string]any{"command": cmd})
	if !res.IsError {
		t.Fatalf("ran without approval: %s", text(res))
	}
	e := structured(t, res)
	if e["decision"] != "deny" || e["hardline"] == true {
		t.Errorf("error = %v; want a non-hardline denial", e)
	}
	if !strings.Contains(text(res), `"chmod-world-writable"`) || !strings.Contains(text(res), "approval.allow") {
		t.Errorf("text = %q; want the rule id and approval.allow", text(res))
	}
	if mode(t, file) == 0o666 {
		t.Errorf("the refused command ran")
	}
}

// TestApproval_ConcurrentAsksCoalesced: identical concurrent commands in a
// session are asked once and share the answer.
func TestApproval_ConcurrentAsksCoalesced(t *testing.T) {
	srv, _ := newServer(t, nil)
	release := make(chan struct{})
	var n atomic.Int32
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		n.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	cmd, _ := askCommand(t)
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 3)
	for i := range results {
		wg.Go(func() { results[i] = call(t, cs, "terminal", map[string]any{"command": cmd}) })
	}
	testwait.Until(t, "three calls waiting for the answer", func() bool { return server.WaitingAskers(srv) == 3 })
	close(release)
	wg.Wait()
	if n.Load() != 1 {
		t.Errorf("asked %d times for 3 identical concurrent commands; want 1", n.Load())
	}
	for i, r := range results {
		if !r.IsError {
			t.Errorf("call %d ran after a decline: %s", i, text(r))
		}
	}
}

// TestCheckCommand_Verdicts: the gate's verdict as the session would get
// it, without running anything.
func TestCheckCommand_Verdicts(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	asker := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: (&elicitor{}).handle})
	cmd, file := askCommand(t)
	for _, tc := range []struct {
		name     string
		cs       *mcp.ClientSession
		command  string
		decision string
		hardline bool
	}{
		{"harmless", cs, "ls -la", "allow", false},
		{"hardline", cs, "rm -rf --no-preserve-root /", "deny", true},
		{"needs approval, nobody to ask", cs, cmd, "deny", false},
		{"needs approval, client can ask", asker, cmd, "ask", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := mustOK(t, tc.cs, "check_command", map[string]any{"command": tc.command})
			if out["decision"] != tc.decision || out["hardline"] != tc.hardline || out["command"] != tc.command {
				t.Errorf("check(%q) = %v; want decision %s, hardline %v", tc.command, out, tc.decision, tc.hardline)
			}
		})
	}
	if mode(t, file) == 0o666 {
		t.Errorf("check_command ran the command")
	}
}

// TestApproval_QuestionEscapesCommand: a command written to spoof the
// question (a newline and a forged reason, a carriage return and an ANSI
// erase-line, U+202E to reverse the rest) reaches the human behind the
// client with runbox's words first and the command on one line, every
// control and format character escaped. The same text shown raw would
// put the forged reason on a line of its own.
func TestApproval_QuestionEscapesCommand(t *testing.T) {
	srv, _ := newServer(t, nil)
	e := &elicitor{res: mcp.ElicitResult{Action: "decline"}}
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: e.handle})
	cmd, file := askCommand(t)
	const forged = "  - harmless: lists files only"
	spoof := cmd + "\n" + forged + "\nls -l\r\x1b[2K\u202e~ fr- mr"
	if !slices.Contains(strings.Split(spoof, "\n"), forged) {
		t.Fatal("the spoofing command holds no forged line; the test proves nothing")
	}
	res := call(t, cs, "terminal", map[string]any{"command": spoof})
	if !res.IsError || mode(t, file) == 0o666 {
		t.Fatalf("the declined command ran: %s", text(res))
	}
	if e.n.Load() != 1 {
		t.Fatalf("asked %d times; want once", e.n.Load())
	}
	q := e.asked[0]
	lines := strings.Split(q, "\n")
	if slices.Contains(lines, forged) || strings.ContainsAny(q, "\r\x1b\u202e") {
		t.Errorf("question forges a line or passes a control character on:\n%q", q)
	}
	escaped := "  $ " + cmd + `\n  - harmless: lists files only\nls -l\r\x1b[2K\u202e~ fr- mr`
	at := slices.Index(lines, escaped)
	if at < 0 {
		t.Fatalf("question does not show the command escaped on one line (%q):\n%s", escaped, q)
	}
	rules := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "rules: ") && strings.Contains(l, "chmod-world-writable")
	})
	if rules < 0 || rules > at {
		t.Errorf("the rule ids do not come before the command:\n%s", q)
	}
}
