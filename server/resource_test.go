package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// updates counts the notifications/resources/updated a client receives.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *updates) handle(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	u.uris = append(u.uris, req.Params.URI)
	u.mu.Unlock()
}

func (u *updates) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.uris)
}

// count is the number of runbox.jobs log messages received.
func (n *notices) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.list)
}

// subscriber connects a client that subscribes to the events resource;
// n receives its log messages (none are expected), u its updates.
func subscriber(t *testing.T, srv *server.Server) (cs *mcp.ClientSession, n *notices, u *updates) {
	t.Helper()
	n, u = &notices{}, &updates{}
	cs = connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle, ResourceUpdatedHandler: u.handle})
	subscribe(t, cs)
	return cs, n, u
}

func subscribe(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: server.EventsURI}); err != nil {
		t.Fatalf("subscribe %s: %v", server.EventsURI, err)
	}
}

// readJobEvents reads the events resource once.
func readJobEvents(t *testing.T, cs *mcp.ClientSession) []server.Notice {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: server.EventsURI})
	if err != nil {
		t.Fatalf("read %s: %v", server.EventsURI, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || res.Contents[0].URI != server.EventsURI {
		t.Fatalf("read %s = %+v; want one application/json content", server.EventsURI, res.Contents)
	}
	var got struct {
		Events *[]server.Notice `json:"events"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &got); err != nil || got.Events == nil {
		t.Fatalf("read %s: %q is not {\"events\": [...]} (%v)", server.EventsURI, res.Contents[0].Text, err)
	}
	return *got.Events
}

// ofJob returns the notices of type typ for job id.
func ofJob(nts []server.Notice, id, typ string) []server.Notice {
	var out []server.Notice
	for _, nt := range nts {
		if nt.Event.Job == id && string(nt.Event.Type) == typ {
			out = append(out, nt)
		}
	}
	return out
}

// listEvents returns the events of a process list.
func listEvents(t *testing.T, cs *mcp.ClientSession) []any {
	t.Helper()
	list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	evs, _ := list["events"].([]any)
	return evs
}

// startJob starts a background job with notify_on_complete and returns
// its id.
func startJob(t *testing.T, cs *mcp.ClientSession, command string) string {
	t.Helper()
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": command, "background": true, "notify_on_complete": true})
	return out["session_id"].(string)
}

// TestEventsResource_SubscribedClientReads protects the resource
// channel: the server declares it (resources with subscribe, the
// resource listed); a subscribed client is told its job completed
// (notifications/resources/updated, to it alone: another subscribed
// session hears nothing), and its read returns the completion exactly
// once: not again in a second read, nor in process list, nor as a log
// message. An event after the read is announced again. A client that
// does not subscribe still gets the log message.
func TestEventsResource_SubscribedClientReads(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs, n, u := subscriber(t, srv)
	_, otherN, otherU := subscriber(t, srv)
	plainN := &notices{}
	plain := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: plainN.handle})

	caps := cs.InitializeResult().Capabilities
	if b, _ := json.Marshal(caps); caps.Resources == nil || !caps.Resources.Subscribe || !strings.Contains(string(b), `"logging":{}`) {
		t.Errorf("capabilities = %s; want resources with subscribe, and logging still", b)
	}
	rl, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rl.Resources, func(r *mcp.Resource) bool {
		return r.URI == server.EventsURI && r.MIMEType == "application/json"
	}) {
		t.Errorf("resources/list = %+v; want %s", rl.Resources, server.EventsURI)
	}
	if evs := readJobEvents(t, cs); len(evs) != 0 {
		t.Errorf("a read before any job = %+v; want []", evs)
	}

	id := startJob(t, cs, "echo tail-line; exit 4")
	testwait.Until(t, "the update", func() bool { return u.count() > 0 })
	got := readJobEvents(t, cs)
	c := ofJob(got, id, "completion")
	if len(c) != 1 || c[0].Event.Exit == nil || c[0].Event.Exit.Code != 4 ||
		!strings.HasPrefix(c[0].Message, "[background job "+id+" completed: exit 4]") || !strings.Contains(c[0].Message, "tail-line") {
		t.Fatalf("read = %+v; want one completion of %s, exit 4, with its message", got, id)
	}
	if again := readJobEvents(t, cs); len(again) != 0 {
		t.Errorf("a second read returned %+v; want none", again)
	}
	if evs := listEvents(t, cs); len(evs) != 0 {
		t.Errorf("process list after the read returned %v; want none", evs)
	}

	// The next event, after the read, is announced again.
	before := u.count()
	id2 := startJob(t, cs, "true")
	testwait.Until(t, "the update after the read", func() bool { return u.count() > before })
	if c := ofJob(readJobEvents(t, cs), id2, "completion"); len(c) != 1 {
		t.Errorf("the read after the second update has %d completions of %s; want 1", len(c), id2)
	}

	// Control: a client that does not subscribe is sent a log message;
	// once it is here, any log message for the subscribed session's jobs
	// would have been too.
	pid := startJob(t, plain, "true")
	testwait.Until(t, "the unsubscribed client's log message", func() bool { return len(plainN.of(pid, "completion")) > 0 })
	if len(n.of(id, "completion"))+len(n.of(id2, "completion")) != 0 {
		t.Errorf("the subscribed client was also sent %d log messages", n.count())
	}
	if otherU.count() != 0 || otherN.count() != 0 {
		t.Errorf("another subscribed session heard of this one's events: %d updates, %d log messages", otherU.count(), otherN.count())
	}
	if got := len(plainN.of(pid, "completion")); got != 1 {
		t.Errorf("the unsubscribed client got %d completion log messages; want 1", got)
	}
}

// TestEventsResource_UnsubscribeRestoresLogs: after unsubscribe a
// session's job events are log messages again, and no update is sent.
func TestEventsResource_UnsubscribeRestoresLogs(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs, n, u := subscriber(t, srv)
	id := startJob(t, cs, "true")
	testwait.Until(t, "the update", func() bool { return u.count() > 0 })
	if c := ofJob(readJobEvents(t, cs), id, "completion"); len(c) != 1 {
		t.Fatalf("read: %d completions; want 1", len(c))
	}
	if err := cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: server.EventsURI}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	updates := u.count()
	id2 := startJob(t, cs, "true")
	testwait.Until(t, "the log message after unsubscribe", func() bool { return len(n.of(id2, "completion")) > 0 })
	if u.count() != updates {
		t.Errorf("an update was sent after unsubscribe")
	}
	if evs := readJobEvents(t, cs); len(evs) != 0 {
		t.Errorf("a read after the log message returned %+v; want none", evs)
	}
	if len(n.of(id, "completion")) != 0 {
		t.Errorf("the completion read while subscribed was also sent as a log message")
	}
}

// TestEventsResource_UnknownURIRefused: a subscription to a resource
// runbox does not have is refused as not found.
func TestEventsResource_UnknownURIRefused(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "runbox://nothing"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("subscribe to an unknown resource = %v; want resource not found", err)
	}
}

// TestEventsResource_ManyAtOnce: many jobs ending together reach a
// subscribed client through reads made only when it is told to read:
// each completion once, with no more updates than events (they are
// coalesced) and none lost (a lost last one would leave events unread).
func TestEventsResource_ManyAtOnce(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs, n, u := subscriber(t, srv)
	gate := filepath.Join(t.TempDir(), "go")
	const jobs = 8
	var ids []string
	for i := range jobs {
		ids = append(ids, startJob(t, cs, fmt.Sprintf("until [ -e %s ]; do sleep 0.02; done; echo job-%d", gate, i)))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	seen := 0
	testwait.Until(t, "every completion, read when told", func() bool {
		if c := u.count(); c > seen {
			seen = c
			for _, nt := range readJobEvents(t, cs) {
				if nt.Event.Type == "completion" {
					got[nt.Event.Job]++
				}
			}
		}
		return len(got) == jobs
	})
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("job %s's completion was read %d times; want once", id, got[id])
		}
	}
	if c := u.count(); c > jobs {
		t.Errorf("%d updates for %d events; want them coalesced", c, jobs)
	}
	if evs := listEvents(t, cs); len(evs) != 0 {
		t.Errorf("process list after the reads returned %v", evs)
	}
	if n.count() != 0 {
		t.Errorf("%d log messages sent to a subscribed client", n.count())
	}
}

// TestEventsResource_HTTP: over HTTP a subscribed client with its
// standalone stream open is told on it; one with none open cannot be
// told: its event stays queued for its next read, or is announced once
// a stream opens. Neither is sent a log message.
func TestEventsResource_HTTP(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	connectSub := func(noStream bool) (*mcp.ClientSession, *notices, *updates) {
		n, u := &notices{}, &updates{}
		cs := connectHTTP(t, url, http.DefaultClient, noStream, &mcp.ClientOptions{LoggingMessageHandler: n.handle, ResourceUpdatedHandler: u.handle})
		subscribe(t, cs)
		return cs, n, u
	}

	t.Run("stream", func(t *testing.T) {
		cs, n, u := connectSub(false)
		id := startJob(t, cs, "echo over-http")
		testwait.Until(t, "the update on the stream", func() bool { return u.count() > 0 })
		if c := ofJob(readJobEvents(t, cs), id, "completion"); len(c) != 1 {
			t.Errorf("read: %d completions of %s; want 1", len(c), id)
		}
		if evs := readJobEvents(t, cs); len(evs) != 0 {
			t.Errorf("second read = %+v; want none", evs)
		}
		if n.count() != 0 {
			t.Errorf("%d log messages sent to a subscribed client", n.count())
		}
	})

	t.Run("no stream", func(t *testing.T) {
		cs, n, _ := connectSub(true)
		id := startJob(t, cs, "echo queued")
		mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 30})
		var read []server.Notice
		testwait.Until(t, "the completion in a read", func() bool {
			read = append(read, readJobEvents(t, cs)...)
			return len(ofJob(read, id, "completion")) > 0
		})
		if c := ofJob(read, id, "completion"); len(c) != 1 {
			t.Errorf("reads returned %d completions of %s; want 1", len(c), id)
		}
		if evs := listEvents(t, cs); len(evs) != 0 {
			t.Errorf("process list after the read returned %v", evs)
		}

		// A queued event is announced once a stream opens.
		id2 := startJob(t, cs, "echo later")
		mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id2, "timeout": 30})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		stream := openStream(t, ctx, url, cs.ID())
		defer stream.Body.Close()
		events := make(chan sseEvent)
		go readEvents(stream.Body, events)
		for announced := false; !announced; {
			select {
			case ev, open := <-events:
				if !open {
					t.Fatal("the stream ended before the update")
				}
				announced = strings.Contains(ev.data, "notifications/resources/updated") && strings.Contains(ev.data, server.EventsURI)
			case <-ctx.Done():
				t.Fatal("no update on the stream once it opened")
			}
		}
		if c := ofJob(readJobEvents(t, cs), id2, "completion"); len(c) != 1 {
			t.Errorf("read after the update: %d completions of %s; want 1", len(c), id2)
		}
		if n.count() != 0 {
			t.Errorf("%d log messages sent to a subscribed client", n.count())
		}
		stream.Body.Close()
		for range events {
		}
	})
}
