package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"net/http"
)

// serveOnDaemon runs `runbox serve --http` in this process on the test's
// job daemon (the sandbox off: what is tested is the daemon, not the
// sandbox) and returns a function that connects one more MCP session.
func serveOnDaemon(t *testing.T, env map[string]string) func() *mcp.ClientSession {
	t.Helper()
	errb, done, ctx, cancel := serveInProcess(t, env, "--sandbox", "off", "--http", "127.0.0.1:0")
	var sessions []*mcp.ClientSession
	t.Cleanup(func() {
		for _, s := range sessions {
			s.Close()
		}
		cancel()
		<-done
	})
	url, tokFile := servedAddress(t, errb, done)
	tok, err := os.ReadFile(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	hc := bearerClient(strings.TrimSpace(string(tok)))
	return func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, cs)
		return cs
	}
}

// bearerClient sends the server's bearer token with every request.
func bearerClient(tok string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

// terminal calls the terminal tool and returns its structured result.
func terminal(t *testing.T, cs *mcp.ClientSession, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "terminal", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("terminal %v: %v %+v", args, err, res)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out
}

// Two sessions of one `runbox serve`: a foreground command of session A
// runs the real runbox CLI against session B's background job, knowing
// the daemon's state directory, and is refused — B's job runs on and its
// output stays unread. The same CLI calls run by a background job of B
// work (the control).
func TestServe_SessionCommandCannotReachAnotherSessionsJob(t *testing.T) {
	env := jobsEnv(t)
	connect := serveOnDaemon(t, env)
	sa, sb := connect(), connect()
	started := terminal(t, sb, map[string]any{"command": "echo b-secret-output; exec sleep 600", "background": true})
	bid, _ := started["session_id"].(string)
	if bid == "" {
		t.Fatalf("background start answered %v", started)
	}
	// What a command of a session can run: the CLI, told where the state
	// is (runbox does not tell it: RUNBOX_* never reach a command).
	cliCall := fmt.Sprintf("RUNBOX_TEST_RUN_MAIN=1 RUNBOX_STATE_DIR=%s GORACE=atexit_sleep_ms=0 %s",
		env["RUNBOX_STATE_DIR"], runboxSelf(t))
	attack := fmt.Sprintf("%[1]s ps --all; %[1]s logs %[2]s; %[1]s kill %[2]s; echo done", cliCall, bid)

	res := terminal(t, sa, map[string]any{"command": attack, "timeout": 120})
	out, _ := res["output"].(string)
	t.Logf("session A's command printed:\n%s", out)
	if strings.Contains(out, "b-secret-output") || strings.Contains(out, bid+" killed") || !strings.Contains(out, "done") {
		t.Errorf("session A's command reached B's job:\n%s", out)
	}
	if !strings.Contains(out, "denied") {
		t.Errorf("session A's command was not refused:\n%s", out)
	}
	res2, err := sb.CallTool(t.Context(), &mcp.CallToolParams{Name: "process", Arguments: map[string]any{"action": "poll", "session_id": bid}})
	if err != nil || res2.IsError {
		t.Fatalf("B polls its job: %v %+v", err, res2)
	}
	if b, _ := json.Marshal(res2.StructuredContent); !strings.Contains(string(b), `"status":"running"`) {
		t.Errorf("B's job after A's attack: %s; want running", b)
	}

	// Control: a background job of B runs the same calls.
	ctl := terminal(t, sb, map[string]any{"command": attack, "background": true})
	cid, _ := ctl["session_id"].(string)
	res3, err := sb.CallTool(t.Context(), &mcp.CallToolParams{Name: "process", Arguments: map[string]any{"action": "wait", "session_id": cid, "timeout": 120}})
	if err != nil || res3.IsError {
		t.Fatalf("wait for B's control job: %v %+v", err, res3)
	}
	res4, err := sb.CallTool(t.Context(), &mcp.CallToolParams{Name: "process", Arguments: map[string]any{"action": "log", "session_id": cid}})
	if err != nil || res4.IsError {
		t.Fatalf("log of B's control job: %v %+v", err, res4)
	}
	b, _ := json.Marshal(res4.StructuredContent)
	t.Logf("B's control job: %s", b)
	if !strings.Contains(string(b), "b-secret-output") || !strings.Contains(string(b), bid+" killed") {
		t.Errorf("B's own job running the same calls: %s; want B's output read and B's job killed", b)
	}
}
