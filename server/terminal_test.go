package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// TestServer_ListsTheContractTools: the tool names are the contract, and
// execute_code among them.
func TestServer_ListsTheContractTools(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(names, ","), "check_command,execute_code,process,tasks,terminal,undo"; got != want {
		t.Errorf("tools = %s; want %s", got, want)
	}
}

// TestTerminal_SessionStateAcrossCalls protects the session promise: cd
// and export in one call are seen by the next call of the same client.
func TestTerminal_SessionStateAcrossCalls(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	dir := t.TempDir()
	mustOK(t, cs, "terminal", map[string]any{"command": "cd " + dir + " && export RB_X=42"})
	out, txt := mustOK(t, cs, "terminal", map[string]any{"command": "echo $RB_X $PWD"})
	if got, want := strings.TrimSpace(out["output"].(string)), "42 "+dir; got != want {
		t.Errorf("second call printed %q; want %q", got, want)
	}
	if out["exit_code"] != 0.0 || out["timed_out"] != false || out["cwd"] != dir {
		t.Errorf("result = %v; want exit_code 0, timed_out false, cwd %s", out, dir)
	}
	if !strings.Contains(txt, "42 "+dir) || !strings.Contains(txt, "[exit 0]") {
		t.Errorf("text block = %q; want the output and [exit 0]", txt)
	}
}

// TestTerminal_ExitCodeIsAResult: a failing command is a result with its
// exit code, not a tool error (the command ran).
func TestTerminal_ExitCodeIsAResult(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	out, txt := mustOK(t, cs, "terminal", map[string]any{"command": "echo oops >&2; exit 3"})
	if out["exit_code"] != 3.0 || !strings.Contains(out["output"].(string), "oops") {
		t.Errorf("result = %v; want exit_code 3 with the stderr text", out)
	}
	if !strings.Contains(txt, "[exit 3]") {
		t.Errorf("text = %q; want [exit 3]", txt)
	}
}

// TestTerminal_Timeout124: the timeout kills the tree and reports 124,
// and the call returns long before the command would have ended.
func TestTerminal_Timeout124(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	start := time.Now()
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "timeout": 0.5})
	if out["exit_code"] != 124.0 || out["timed_out"] != true {
		t.Errorf("result = %v; want exit_code 124, timed_out true", out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the call took %v", d)
	}
	// A timed-out command changes no session state; the session works.
	out, _ = mustOK(t, cs, "terminal", map[string]any{"command": "echo alive"})
	if strings.TrimSpace(out["output"].(string)) != "alive" {
		t.Errorf("after a timeout: %v", out)
	}
}

// TestTerminal_HardlineRefused: a hardline command is a tool error that
// says why, and nothing runs.
func TestTerminal_HardlineRefused(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	res := call(t, cs, "terminal", map[string]any{"command": "rm -rf --no-preserve-root /"})
	if !res.IsError {
		t.Fatalf("rm -rf / was not refused: %s", text(res))
	}
	e := structured(t, res)
	if e["kind"] != "denied" || e["hardline"] != true || e["hint"] != nil {
		t.Errorf("error = %v; want kind denied, hardline, no hint", e)
	}
	if !strings.Contains(text(res), "hardline") {
		t.Errorf("text = %q; want it to say hardline", text(res))
	}
}

// TestTerminal_BadArguments: arguments that break the schema or the
// tool's rules are tool errors that say what is wrong; nothing runs.
func TestTerminal_BadArguments(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"no command", "terminal", map[string]any{}, "command"},
		{"empty command", "terminal", map[string]any{"command": ""}, "command"},
		{"wrong type", "terminal", map[string]any{"command": "true", "timeout": "soon"}, "timeout"},
		{"negative timeout", "terminal", map[string]any{"command": "true", "timeout": -1}, "timeout"},
		{"unknown argument", "terminal", map[string]any{"command": "true", "shell": "zsh"}, "shell"},
		{"notify in the foreground", "terminal", map[string]any{"command": "true", "notify_on_complete": true}, "background"},
		{"timeout in the background", "terminal", map[string]any{"command": "true", "background": true, "timeout": 5}, "timeout"},
		{"unknown action", "process", map[string]any{"action": "pause", "session_id": "x"}, "action"},
		{"no job id", "process", map[string]any{"action": "poll"}, "session_id"},
		{"write without data", "process", map[string]any{"action": "write", "session_id": "x"}, "data"},
		{"check without command", "check_command", map[string]any{}, "command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("%s(%v) = error %v, %q; want a tool error mentioning %q", tc.tool, tc.args, res.IsError, text(res), tc.want)
			}
		})
	}
}

// TestServer_SessionsIsolated: two clients get two sessions: neither sees
// the other's shell state or jobs.
func TestServer_SessionsIsolated(t *testing.T) {
	srv, _ := newServer(t, nil)
	a := connect(t, srv, nil)
	b := connect(t, srv, nil)
	dir := t.TempDir()
	mustOK(t, a, "terminal", map[string]any{"command": "cd " + dir + " && export RB_WHO=a"})
	out, _ := mustOK(t, b, "terminal", map[string]any{"command": "echo \"[$RB_WHO]\" $PWD"})
	if got := out["output"].(string); strings.Contains(got, "[a]") || strings.Contains(got, dir) {
		t.Errorf("session b saw session a's state: %q", got)
	}
	job, _ := mustOK(t, a, "terminal", map[string]any{"command": "sleep 30", "background": true})
	id := job["session_id"].(string)
	mustOK(t, b, "terminal", map[string]any{"command": "sleep 30", "background": true})
	list, _ := mustOK(t, b, "process", map[string]any{"action": "list"})
	for _, j := range list["jobs"].([]any) {
		if j.(map[string]any)["id"] == id {
			t.Errorf("session b lists session a's job %s", id)
		}
	}
	for _, action := range []string{"poll", "kill"} {
		res := call(t, b, "process", map[string]any{"action": action, "session_id": id})
		if !res.IsError || structured(t, res)["kind"] != "not_found" {
			t.Errorf("session b %s of a's job: %s; want not found", action, text(res))
		}
	}
	p, _ := mustOK(t, a, "process", map[string]any{"action": "poll", "session_id": id})
	if p["status"] != "running" {
		t.Errorf("a's job after b's attempts: %v; want running", p["status"])
	}
}

// TestServer_SessionEndTearsDown protects the lifetime promise: when the
// client goes, its environment is closed and its session-lifetime jobs
// are killed, while a detached job runs on.
func TestServer_SessionEndTearsDown(t *testing.T) {
	srv, jobs := newServer(t, nil)
	cs := connect(t, srv, nil)
	mine, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true})
	kept, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true, "detach": true})
	if srv.Sessions() != 1 {
		t.Fatalf("Sessions() = %d; want 1", srv.Sessions())
	}
	cs.Close()
	testwait.Until(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	in, err := jobs.reg.Get(mine["session_id"].(string))
	if err != nil || in.KilledBy != "session-end" {
		t.Errorf("the session's job after it ended: %+v, %v; want killed by session-end", in, err)
	}
	in, err = jobs.reg.Get(kept["session_id"].(string))
	if err != nil || in.Status.Finished() {
		t.Errorf("the detached job after the session ended: %+v, %v; want running", in, err)
	}
}

// TestServer_SessionCap: a client beyond --max-sessions is refused at
// initialize, with the cap named.
func TestServer_SessionCap(t *testing.T) {
	srv, _ := newServer(t, func(o *server.Options) { o.MaxSessions = 1 })
	connect(t, srv, nil)
	_, err := tryConnect(t, srv, nil)
	if err == nil || !strings.Contains(err.Error(), "too many sessions") {
		t.Errorf("second client: err = %v; want too many sessions", err)
	}
}

// TestTerminal_PTY: a pty command sees a terminal.
func TestTerminal_PTY(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "test -t 1 && echo tty || echo notty", "pty": true})
	if !strings.Contains(out["output"].(string), "tty") || strings.Contains(out["output"].(string), "notty") {
		t.Errorf("pty output = %q; want tty", out["output"])
	}
}

// TestTerminal_Workdir: workdir applies to the one command.
func TestTerminal_Workdir(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "marker"), nil, 0o600)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "ls", "workdir": dir})
	if !strings.Contains(out["output"].(string), "marker") {
		t.Errorf("ls in workdir = %q", out["output"])
	}
}
