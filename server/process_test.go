package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// notices collects the job notifications a client receives.
type notices struct {
	mu   sync.Mutex
	list []server.Notice
	lvl  []mcp.LoggingLevel
}

func (n *notices) handle(_ context.Context, req *mcp.LoggingMessageRequest) {
	b, _ := json.Marshal(req.Params.Data)
	var nt server.Notice
	if json.Unmarshal(b, &nt) != nil || req.Params.Logger != "runbox.jobs" {
		return
	}
	n.mu.Lock()
	n.list = append(n.list, nt)
	n.lvl = append(n.lvl, req.Params.Level)
	n.mu.Unlock()
}

// of returns the notices of type typ for job id.
func (n *notices) of(id, typ string) []server.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []server.Notice
	for _, nt := range n.list {
		if nt.Event.Job == id && string(nt.Event.Type) == typ {
			out = append(out, nt)
		}
	}
	return out
}

// TestBackground_NotifyOnCompleteOnce protects the notification promise:
// a background job started with notify_on_complete reports its completion
// to the client that started it, as a log message a stock client receives
// (the client never set a log level), exactly once.
func TestBackground_NotifyOnCompleteOnce(t *testing.T) {
	srv, _ := newServer(t, nil)
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	other := &notices{}
	connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: other.handle})

	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo first line; echo last line; exit 3", "background": true, "notify_on_complete": true})
	id, _ := out["session_id"].(string)
	if id == "" || out["pid"].(float64) <= 0 {
		t.Fatalf("background start = %v; want session_id and pid", out)
	}
	testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	nt := n.of(id, "completion")[0]
	if want := "[background job " + id + " completed: exit 3]"; !strings.HasPrefix(nt.Message, want) || !strings.Contains(nt.Message, "last line") {
		t.Errorf("notice message = %q; want it to start %q and carry the output's tail", nt.Message, want)
	}
	if nt.Event.Exit == nil || nt.Event.Exit.Code != 3 {
		t.Errorf("notice event = %+v; want exit 3", nt.Event)
	}
	// Events arrive in order: once a later job's completion is here, a
	// second delivery of the first would have arrived before it.
	out2, _ := mustOK(t, cs, "terminal", map[string]any{"command": "true", "background": true, "notify_on_complete": true})
	id2 := out2["session_id"].(string)
	testwait.Until(t, "the second completion notice", func() bool { return len(n.of(id2, "completion")) > 0 })
	if got := len(n.of(id, "completion")); got != 1 {
		t.Errorf("the first job's completion arrived %d times; want once", got)
	}
	if len(other.of(id, "completion")) != 0 {
		t.Errorf("another client received this session's notice")
	}
	// Delivered events are not returned again by list.
	list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if evs, _ := list["events"].([]any); len(evs) != 0 {
		t.Errorf("list after delivery returned events %v; want none", evs)
	}
}

// TestBackground_WatchAndHeartbeat: watch matches reach the client with
// the matching line, and heartbeats with the new output.
func TestBackground_WatchAndHeartbeat(t *testing.T) {
	srv, _ := newServer(t, nil)
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	out, _ := mustOK(t, cs, "terminal", map[string]any{
		"command": "echo starting; echo 'ERROR: disk full'; while :; do echo tick; sleep 0.05; done", "background": true,
		"watch_patterns": []string{"ERROR"}, "heartbeat": 0.1,
	})
	id := out["session_id"].(string)
	testwait.Until(t, "the watch notice", func() bool { return len(n.of(id, "watch")) > 0 })
	if m := n.of(id, "watch")[0].Message; !strings.Contains(m, "ERROR: disk full") || !strings.Contains(m, id) {
		t.Errorf("watch notice = %q; want the job and the matching line", m)
	}
	testwait.Until(t, "a heartbeat notice", func() bool { return len(n.of(id, "heartbeat")) > 0 })
	if m := n.of(id, "heartbeat")[0].Message; !strings.Contains(m, "still running") || !strings.Contains(m, "tick") {
		t.Errorf("heartbeat notice = %q; want still running and the new output", m)
	}
}

// TestProcess_Actions: poll, log, wait, write/submit (gated), close, kill
// and handoff on the session's own job.
func TestProcess_Actions(t *testing.T) {
	srv, jobs := newServer(t, nil)
	cs := connect(t, srv, nil)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "cat", "background": true})
	id := out["session_id"].(string)

	mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "echo hello"})
	res := call(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "rm -rf --no-preserve-root /"})
	if !res.IsError || structured(t, res)["hardline"] != true {
		t.Errorf("submitting a hardline line: %s; want refused", text(res))
	}
	mustOK(t, cs, "process", map[string]any{"action": "write", "session_id": id, "data": "partial"})
	mustOK(t, cs, "process", map[string]any{"action": "close", "session_id": id})
	w, _ := mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 30})
	if w["done"] != true {
		t.Fatalf("wait = %v; want done", w)
	}
	log, _ := mustOK(t, cs, "process", map[string]any{"action": "log", "session_id": id})
	if got := log["output"]; got != "echo hello\npartial" {
		t.Errorf("the job read %q; want the allowed lines only", got)
	}
	part, _ := mustOK(t, cs, "process", map[string]any{"action": "log", "session_id": id, "offset": 5, "limit": 3})
	if part["output"] != "hel" || part["next"] != 8.0 {
		t.Errorf("log offset 5 limit 3 = %v; want hel, next 8", part)
	}
	tail, _ := mustOK(t, cs, "process", map[string]any{"action": "log", "session_id": id, "tail": 1})
	if tail["output"] != "partial" {
		t.Errorf("log tail 1 = %q; want partial", tail["output"])
	}
	p, _ := mustOK(t, cs, "process", map[string]any{"action": "poll", "session_id": id[:6]})
	if p["id"] != id || p["status"] != "exited" {
		t.Errorf("poll by prefix = %v; want the exited job", p)
	}

	sleeper, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true})
	k, txt := mustOK(t, cs, "process", map[string]any{"action": "kill", "session_id": sleeper["session_id"]})
	if k["outcome"] != "killed" || !strings.Contains(txt, "killed") {
		t.Errorf("kill = %v, %q", k, txt)
	}

	kept, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true})
	h, _ := mustOK(t, cs, "process", map[string]any{"action": "handoff", "session_id": kept["session_id"], "owner": "someone-else"})
	if h["owner"] != "someone-else" {
		t.Errorf("handoff = %v", h)
	}
	if res := call(t, cs, "process", map[string]any{"action": "poll", "session_id": kept["session_id"]}); !res.IsError {
		t.Errorf("a handed-off job is still the session's: %s", text(res))
	}
	cs.Close()
	testwait.Until(t, "the session to end", func() bool { return srv.Sessions() == 0 })
	if in, err := jobs.reg.Get(kept["session_id"].(string)); err != nil || in.Status.Finished() {
		t.Errorf("the handed-off job after the session ended: %+v, %v; want running", in, err)
	}
}

// TestProcess_JobCap: a session cannot have more live jobs than the cap;
// the refusal says so, and a finished job frees its place.
func TestProcess_JobCap(t *testing.T) {
	srv, _ := newServer(t, func(o *server.Options) { o.MaxJobs = 1 })
	cs := connect(t, srv, nil)
	first, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true})
	res := call(t, cs, "terminal", map[string]any{"command": "sleep 60", "background": true})
	if !res.IsError || structured(t, res)["kind"] != "limit" {
		t.Fatalf("second job over the cap: %s; want a limit error", text(res))
	}
	mustOK(t, cs, "process", map[string]any{"action": "kill", "session_id": first["session_id"]})
	mustOK(t, cs, "terminal", map[string]any{"command": "true", "background": true})
}

// TestProcess_NoJobsYet: a session that never started a job lists none,
// and names no job.
func TestProcess_NoJobsYet(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	out, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if jobs, _ := out["jobs"].([]any); len(jobs) != 0 {
		t.Errorf("list = %v; want no jobs", out)
	}
	if res := call(t, cs, "process", map[string]any{"action": "poll", "session_id": "abc"}); !res.IsError {
		t.Errorf("poll of an unknown job: %s", text(res))
	}
}

// TestProcess_SplitLineJudgedWhole: a refused line sent to a job in
// pieces (write the start, submit the rest) is refused at the piece that
// completes it, since the job's reader joins them; a line of harmless
// pieces goes through.
func TestProcess_SplitLineJudgedWhole(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "cat", "background": true})
	id := out["session_id"].(string)

	res := call(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "git push --force origin main"})
	if !res.IsError {
		t.Fatalf("the whole line in one piece: %s; want refused (the control)", text(res))
	}
	mustOK(t, cs, "process", map[string]any{"action": "write", "session_id": id, "data": "git push --for"})
	res = call(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "ce origin main"})
	if !res.IsError {
		t.Errorf("completing a refused line in a second piece: %s; want refused", text(res))
	}
	mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": " origin"})
	mustOK(t, cs, "process", map[string]any{"action": "write", "session_id": id, "data": "echo he"})
	mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "llo"})
	mustOK(t, cs, "process", map[string]any{"action": "close", "session_id": id})
	mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 30})
	log, _ := mustOK(t, cs, "process", map[string]any{"action": "log", "session_id": id})
	if got := log["output"]; got != "git push --for origin\necho hello\n" {
		t.Errorf("the job read %q; want the refused piece kept out", got)
	}
}
