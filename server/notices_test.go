package server_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
)

// TestNotices_WaitingForInputThenSubmit: a background job blocked in
// `read` reaches a stock client as one waiting-for-input notice with the
// output's tail (on by default, nothing asked for); a submit through the
// process tool lets it finish, with one completion notice.
func TestNotices_WaitingForInputThenSubmit(t *testing.T) {
	srv, _ := newServer(t, nil)
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	out, _ := mustOK(t, cs, "terminal", map[string]any{
		"command": `echo "your name?"; read x; echo "hello $x"`, "background": true, "notify_on_complete": true,
	})
	id := out["session_id"].(string)
	testwait.Until(t, "the waiting-for-input notice", func() bool { return len(n.of(id, "waiting_for_input")) > 0 })
	if m := n.of(id, "waiting_for_input")[0].Message; !strings.Contains(m, "waiting for input") || !strings.Contains(m, "your name?") {
		t.Errorf("notice = %q; want it to say waiting for input, with the tail", m)
	}
	mustOK(t, cs, "process", map[string]any{"action": "submit", "session_id": id, "data": "echo world"})
	testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	if m := n.of(id, "completion")[0].Message; !strings.Contains(m, "completed: exit 0") || !strings.Contains(m, "hello echo world") {
		t.Errorf("completion = %q; want exit 0 and the answer in the tail", m)
	}
	if w, c := len(n.of(id, "waiting_for_input")), len(n.of(id, "completion")); w != 1 || c != 1 {
		t.Errorf("%d waiting-for-input and %d completion notices; want one each", w, c)
	}
}

// TestNotices_QuietAndNoOutputTimeout: quiet_after sends one quiet
// notice for a silent job and no waiting-for-input one (it reads
// nothing); no_output_timeout ends a silent job with its own reason; a
// foreground command refuses both.
func TestNotices_QuietAndNoOutputTimeout(t *testing.T) {
	srv, _ := newServer(t, nil)
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})

	q, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo hi; sleep 5", "background": true, "notify_on_complete": true, "quiet_after": 1})
	qid := q["session_id"].(string)
	s, _ := mustOK(t, cs, "terminal", map[string]any{"command": "sleep 30", "background": true, "notify_on_complete": true, "no_output_timeout": 1})
	sid := s["session_id"].(string)

	testwait.Until(t, "the no-output timeout", func() bool { return len(n.of(sid, "completion")) > 0 })
	c := n.of(sid, "completion")[0]
	if c.Event.Reason != "no_output_timeout" || !strings.Contains(c.Message, "no-output timeout") {
		t.Errorf("completion = %+v; want reason no_output_timeout", c)
	}
	testwait.Until(t, "the quiet job's completion", func() bool { return len(n.of(qid, "completion")) > 0 })
	if got := n.of(qid, "quiet"); len(got) != 1 || !strings.Contains(got[0].Message, "is quiet") || !strings.Contains(got[0].Message, "hi") {
		t.Errorf("quiet notices = %+v; want one with the tail", got)
	}
	if got := n.of(qid, "waiting_for_input"); len(got) != 0 {
		t.Errorf("waiting-for-input notices for a job that reads nothing: %+v", got)
	}
	if res := call(t, cs, "terminal", map[string]any{"command": "true", "quiet_after": 1}); !res.IsError {
		t.Errorf("a foreground command took quiet_after: %s", text(res))
	}
}
