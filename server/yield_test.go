package server_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// laterNotice starts a background job with a completion notice and waits
// for that notice: notices arrive in order, so any notice of an earlier
// job that was going to come has come by then.
func laterNotice(t *testing.T, cs *mcp.ClientSession, n *notices) {
	t.Helper()
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "true", "background": true, "notify_on_complete": true})
	id := out["session_id"].(string)
	testwait.Until(t, "the later job's completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
}

// TestTerminal_YieldStillRunning protects issue 29's check: a command
// still running when its yield passes comes back then, with the output so
// far and a job id, carries on as a background
// job, and sends exactly one completion notice carrying its later output.
func TestTerminal_YieldStillRunning(t *testing.T) {
	srv, _ := newServer(t, nil)
	yieldStillRunning(t, srv)
}

// TestTerminal_YieldDockerSession: the same promises on a docker
// session, whose jobs run in its own container's job daemon.
func TestTerminal_YieldDockerSession(t *testing.T) {
	srv, _ := dockerJobsServer(t)
	t.Run("still running", func(t *testing.T) { yieldStillRunning(t, srv) })
	t.Run("finished first", func(t *testing.T) { yieldFinishedFirst(t, srv) })
	t.Run("submit with a yield", func(t *testing.T) { submitYield(t, srv) })
}

func yieldStillRunning(t *testing.T, srv *server.Server) {
	t.Helper()
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})

	// The command outlasts its yield by 9 s: a sandbox session asks its
	// job daemon whether the job ended, and on a busy machine that answer
	// has come after a 3 s command had ended (the call then rightly
	// returned a finished command).
	out, txt := mustOK(t, cs, "terminal", map[string]any{"command": "echo begun; sleep 10; echo done", "yield": 1})
	id, _ := out["session_id"].(string)
	if id == "" || out["yielded"] != true {
		t.Fatalf("yield result = %v; want yielded with a session_id", out)
	}
	// The output so far: on a quiet machine "begun" alone. On a loaded
	// one the first line may not be there yet (the yield counts from the
	// start, not from the first output), or the calls after the yield
	// may outlast the command's last 9 s and read its end too.
	if o := out["output"].(string); !strings.HasPrefix("begun\ndone\n", o) {
		t.Errorf("output so far = %q; want a prefix of the command's output", o)
	}
	if !strings.Contains(txt, id) || !strings.Contains(txt, "notified") {
		t.Errorf("text = %q; want the job id and the promise of a notice", txt)
	}
	testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	nt := n.of(id, "completion")[0]
	if !strings.Contains(nt.Message, "done") || nt.Event.Exit == nil || nt.Event.Exit.Code != 0 {
		t.Errorf("notice = %+v; want exit 0 and the output's tail with done", nt)
	}
	laterNotice(t, cs, n)
	if got := len(n.of(id, "completion")); got != 1 {
		t.Errorf("the yielded job's completion arrived %d times; want once", got)
	}
}

// TestTerminal_YieldFinishedFirst: a command that ends within its yield
// returns like a foreground command (output, exit code) and no notice
// follows: its end reaches the client exactly once. Without the hold on
// its completion event the pump would deliver it as well.
func TestTerminal_YieldFinishedFirst(t *testing.T) {
	srv, _ := newServer(t, nil)
	yieldFinishedFirst(t, srv)
}

func yieldFinishedFirst(t *testing.T, srv *server.Server) {
	t.Helper()
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})

	var ids []string
	for _, c := range []struct{ cmd, want string }{
		{"echo quick; exit 4", "[exit 4]"},
		{"true", "[exit 0]"},
		{"printf 'no newline'; exit 7", "[exit 7]"},
	} {
		out, txt := mustOK(t, cs, "terminal", map[string]any{"command": c.cmd, "yield": 60})
		if out["yielded"] != nil || out["session_id"] == "" || !strings.Contains(txt, c.want) {
			t.Errorf("%q: result = %v, %q; want a finished result with %s", c.cmd, out, txt, c.want)
		}
		ids = append(ids, out["session_id"].(string))
	}
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo quick; exit 4", "yield": 60})
	if out["exit_code"] != 4.0 || out["output"] != "quick\n" {
		t.Errorf("structured = %v; want exit_code 4 and output quick", out)
	}
	ids = append(ids, out["session_id"].(string))
	laterNotice(t, cs, n)
	for _, id := range ids {
		if got := n.of(id, "completion"); len(got) != 0 {
			t.Errorf("job %s returned its end and was notified as well: %v", id, got)
		}
	}
	list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if evs, _ := list["events"].([]any); len(evs) != 0 {
		t.Errorf("list holds events %v; want none (the ends were returned)", evs)
	}
}

// TestProcess_SubmitYield: a yielded job waiting for input gets a line
// through process submit with a yield, and that call returns what the job
// wrote in answer.
func TestProcess_SubmitYield(t *testing.T) {
	srv, _ := newServer(t, nil)
	submitYield(t, srv)
}

func submitYield(t *testing.T, srv *server.Server) {
	t.Helper()
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})

	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo ready; read x; echo got $x", "yield": 0.2})
	if out["yielded"] != true {
		t.Fatalf("a job blocked on read did not yield: %v", out)
	}
	id := out["session_id"].(string)
	res, txt := mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "hello", "yield": 60})
	if o, _ := res["output"].(string); !strings.Contains(o, "got hello") || strings.Contains(o, "ready") {
		t.Errorf("submit output = %q (%s); want the answer alone: got hello", o, txt)
	}
	// The job's end reaches the client once: as a notice, or, when the
	// pump had not sent it yet, in the events of a tool result that took
	// it (a loaded machine shows both orders).
	inResults := completions(res, id)
	if inResults == 0 {
		testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	}
	poll, _ := mustOK(t, cs, "process", map[string]any{"action": "poll", "session_id": id, "yield": 1})
	if poll["done"] != true {
		t.Errorf("poll with yield of a finished job = %v; want done", poll)
	}
	inResults += completions(poll, id)
	laterNotice(t, cs, n)
	if got := inResults + len(n.of(id, "completion")); got != 1 {
		t.Errorf("the job's completion reached the client %d times (%d in results); want once", got, inResults)
	}
}

// completions counts the completion events of job id that a tool result's
// structured content carries.
func completions(res map[string]any, id string) int {
	evs, _ := res["events"].([]any)
	c := 0
	for _, e := range evs {
		if m, _ := e.(map[string]any); m["job"] == id && m["type"] == "completion" {
			c++
		}
	}
	return c
}

// TestYield_BadArgs: yield is refused where it means nothing.
func TestYield_BadArgs(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"terminal", map[string]any{"command": "true", "yield": 1, "background": true}, "foreground"},
		{"terminal", map[string]any{"command": "true", "yield": 1, "timeout": 5}, "timeout"},
		{"terminal", map[string]any{"command": "true", "yield": -1}, "yield"},
		{"process", map[string]any{"action": "kill", "session_id": "x", "yield": 1}, "yield applies"},
	} {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s(%v) = %q (error %v); want an error naming %q", c.tool, c.args, text(res), res.IsError, c.want)
		}
	}
}
