package server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// vanishing binds every request to gone: once it is cancelled, the
// client can reach the server no more (its DELETE included), as a client
// process that exits without closing its session.
type vanishing struct {
	gone context.Context
	next http.RoundTripper
}

func (v vanishing) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := v.gone.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(v.gone, cancel)
	resp, err := v.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &releasing{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

type releasing struct {
	io.ReadCloser
	release func()
}

func (r *releasing) Close() error { err := r.ReadCloser.Close(); r.release(); return err }

// rawPost sends one JSON-RPC message and returns the response.
func rawPost(t *testing.T, url, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rpcError reads the JSON-RPC error of a plain JSON response.
func rpcError(t *testing.T, resp *http.Response) (id json.RawMessage, code int64, msg string) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil || m.Error == nil {
		t.Fatalf("HTTP %d %q: not a JSON-RPC error: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return m.ID, m.Error.Code, m.Error.Message
}

// TestHTTP_VanishedClientsLeaveNothing protects the promise that clients
// that go away without DELETE (the TypeScript SDK's close sends none)
// leave no session and no process once the idle time has passed, so
// that they never lock new clients out. While they are still counted,
// the session cap refuses a new client with a valid JSON-RPC error and
// no session id (it used to be code 0, with an id).
func TestHTTP_VanishedClientsLeaveNothing(t *testing.T) {
	const clients = 40
	srv, _ := newServer(t, func(o *server.Options) { o.MaxSessions = clients })
	ln, err := server.ListenTCP("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	var deletes atomic.Int32
	h := srv.HTTPHandler(server.HTTPOptions{SessionIdle: 2 * time.Second})
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: counting}
	go hs.Serve(ln)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	url := "http://" + ln.Addr().String() + server.Path

	b := make([]byte, 8)
	rand.Read(b)
	mark := "RB_IDLE_MARK=" + hex.EncodeToString(b)
	t.Cleanup(func() { killMarked(t, mark) })
	// The clients connect and start a job each; their open streams keep
	// their sessions while they wait.
	var vanishers []func()
	for i := range clients {
		gone, vanish := context.WithCancel(context.Background())
		hc := &http.Client{Transport: vanishing{gone, http.DefaultTransport}}
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "vanishing", Version: "1"}, nil).Connect(t.Context(), tr, nil)
		if err != nil {
			vanish()
			t.Fatalf("client %d: connect: %v", i, err)
		}
		vanishers = append(vanishers, func() {
			vanish()
			cs.Close() // its DELETE cannot reach the server any more
		})
		mustOK(t, cs, "terminal", map[string]any{"command": "cd /"}) // its shell
		job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "export " + mark + "\nsleep 3600", "background": true})
		if job["status"] != "running" {
			t.Fatalf("client %d: background job: %v", i, job)
		}
	}
	testwait.Until(t, "every client's job running", func() bool { return len(marked(t, mark)) >= clients })
	if n := srv.Sessions(); n != clients {
		t.Errorf("with every client connected: %d sessions; want %d", n, clients)
	}
	// At the cap, a new client is refused with a JSON-RPC error and no
	// session id.
	resp := rawPost(t, url, "", initializeBody)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a refused client was given session id %q", sid)
	}
	id, code, msg := rpcError(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || code != -32000 || string(id) != "1" || !strings.Contains(msg, "too many sessions") {
		t.Errorf("at the cap: HTTP %d, id %s, code %d, %q; want 503, id 1, -32000, too many sessions", resp.StatusCode, id, code, msg)
	}

	for _, v := range vanishers {
		v()
	}
	if n := deletes.Load(); n != 0 {
		t.Fatalf("%d DELETEs reached the server; the clients were to vanish without one", n)
	}
	testwait.Until(t, "the vanished sessions closed", func() bool { return srv.Sessions() == 0 })
	testwait.Until(t, "their processes gone", func() bool { return len(marked(t, mark)) == 0 })
	cs := connectHTTP(t, url, http.DefaultClient, false, nil)
	if out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo served"}); out["output"] != "served\n" {
		t.Errorf("the 41st client: %v", out)
	}
}

// TestHTTP_OpenStreamIsNotIdle protects a listening client: a session
// whose client keeps its GET stream open outlives the idle time many
// times over, and its shell state with it.
func TestHTTP_OpenStreamIsNotIdle(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{SessionIdle: 200 * time.Millisecond})
	cs := connectHTTP(t, url, http.DefaultClient, false, nil)
	mustOK(t, cs, "terminal", map[string]any{"command": "export KEPT=yes"})
	time.Sleep(2 * time.Second) // ten idle times with the stream open
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo $KEPT"})
	if out["output"] != "yes\n" {
		t.Errorf("after ten idle times with a stream open: %v; want the session kept", out)
	}
}

// TestHTTP_ErrorsBySpec protects the JSON-RPC errors the specification
// names where the SDK alone answered otherwise: an unknown method is
// -32601 (it was HTTP 400 plain text), a request without a session id is
// HTTP 400 (the SDK opened a new session for it), an invalid log level
// is refused (the SDK stored any string).
func TestHTTP_ErrorsBySpec(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	cs := connectHTTP(t, url, http.DefaultClient, true, nil)
	cases := []struct {
		name, session, body string
		status              int
		code                int64
	}{
		{"unknown method", cs.ID(), `{"jsonrpc":"2.0","id":7,"method":"tools/frobnicate","params":{}}`, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"no session id", "", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"no session id, unknown method", "", `{"jsonrpc":"2.0","id":7,"method":"nope"}`, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := rawPost(t, url, tc.session, tc.body)
			id, code, msg := rpcError(t, resp)
			if resp.StatusCode != tc.status || code != tc.code || string(id) != "7" {
				t.Errorf("HTTP %d, id %s, code %d (%s); want %d, id 7, code %d", resp.StatusCode, id, code, msg, tc.status, tc.code)
			}
		})
	}
	if n := srv.Sessions(); n != 1 {
		t.Errorf("%d sessions after requests without an id; want the one", n)
	}
	t.Run("invalid log level", func(t *testing.T) {
		err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "loud"})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, `"loud"`) {
			t.Errorf("setLevel loud: %v; want -32602 naming the level", err)
		}
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Errorf("setLevel debug: %v", err)
		}
	})
}

// sseEvent is one event of an SSE stream.
type sseEvent struct{ id, data, retry string }

// readEvents reads SSE events from r to ch until r ends.
func readEvents(r io.Reader, ch chan<- sseEvent) {
	defer close(ch)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			ch <- ev
			ev = sseEvent{}
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimSpace(line[5:])
		case strings.HasPrefix(line, "retry:"):
			ev.retry = strings.TrimSpace(line[6:])
		}
	}
}

// TestHTTP_ResumeCutStream protects resumability: a client whose stream
// is cut while a 5-second terminal call runs reconnects with
// Last-Event-ID and receives the call's result. The stream starts with a
// retry: hint and an event id.
func TestHTTP_ResumeCutStream(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	cs := connectHTTP(t, url, http.DefaultClient, true, nil)

	resp := rawPost(t, url, cs.ID(), `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"terminal","arguments":{"command":"sleep 5; echo finished"}}}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("tools/call answered %s, not a stream", ct)
	}
	events := make(chan sseEvent)
	go readEvents(resp.Body, events)
	var retry, last string
	for ev := range events {
		if ev.retry != "" {
			retry = ev.retry
		}
		if ev.id != "" {
			last = ev.id
			break
		}
	}
	resp.Body.Close() // the cut, mid-call
	for range events {
	}
	if retry == "" || last == "" {
		t.Fatalf("the stream started without a retry hint (%q) or an event id (%q)", retry, last)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resumed := resume(t, ctx, url, cs.ID(), last, retry)
	defer resumed.Body.Close()
	events = make(chan sseEvent)
	go readEvents(resumed.Body, events)
	for ev := range events {
		if strings.Contains(ev.data, `"id":"long"`) {
			if !strings.Contains(ev.data, `finished\n`) {
				t.Errorf("the resumed result: %s", ev.data)
			}
			cancel()
			for range events {
			}
			return
		}
	}
	t.Fatal("the resumed stream ended without the call's result")
}

// resume reconnects to a cut stream with Last-Event-ID, as a client does:
// until the server has seen the cut, the stream is still its own and a
// reconnection is refused with 409, so it tries again after the stream's
// retry hint (milliseconds), within ctx.
func resume(t *testing.T, ctx context.Context, url, session, last, retry string) *http.Response {
	t.Helper()
	wait, err := strconv.Atoi(retry)
	if err != nil {
		t.Fatalf("retry hint %q: %v", retry, err)
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("resume: HTTP %d: %s", resp.StatusCode, b)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("resume: still HTTP 409 (%s) when the wait ended", b)
		case <-time.After(time.Duration(wait) * time.Millisecond):
		}
	}
}

// TestHTTP_OneCompletionNoticePerJob protects the notices a stock client
// receives over HTTP with its stream open: exactly one completion notice
// per job, for every job. The jobs end one after another, each released
// by the test once the notice of the one before has arrived, so that a
// repeated notice of an earlier job would arrive before the last one's.
func TestHTTP_OneCompletionNoticePerJob(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	n := &notices{}
	cs := connectHTTP(t, url, http.DefaultClient, false, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	gate := t.TempDir()
	var ids []string
	for i := range 3 {
		cmd := "while [ ! -e " + gate + "/" + strconv.Itoa(i) + " ]; do sleep 0.05; done; echo job" + strconv.Itoa(i)
		job, _ := mustOK(t, cs, "terminal", map[string]any{"command": cmd, "background": true, "notify_on_complete": true})
		ids = append(ids, job["session_id"].(string))
	}
	for i, id := range ids {
		if err := os.WriteFile(filepath.Join(gate, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "job "+id+"'s completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	}
	for _, id := range ids {
		if got := n.of(id, "completion"); len(got) != 1 {
			t.Errorf("job %s: %d completion notices; want exactly one: %+v", id, len(got), got)
		}
	}
}
