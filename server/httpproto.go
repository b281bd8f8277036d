package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file wraps the SDK's streamable HTTP handler where what it decides
// falls short of the MCP specification or of what runbox promises:
//
//   - a request for a method the server does not have is a JSON-RPC
//     -32601 error (the SDK answers HTTP 400 with plain text);
//   - a request other than initialize without Mcp-Session-Id is HTTP 400
//     with a JSON-RPC error (the SDK opens a new session for it);
//   - an initialize beyond the session cap is refused with a JSON-RPC
//     error and no session id (the SDK hands out an id before runbox can
//     refuse);
//   - SSE responses start with a retry: hint, so a client whose stream is
//     cut knows how soon to resume it with Last-Event-ID;
//   - a session is idle only while no request of it is open, its
//     standalone GET stream included (the SDK's timer runs while a GET
//     stream is open, and closes a session whose client is listening);
//   - a standalone stream reconnected without Last-Event-ID resumes after
//     what was written to the client, and a cancelled request is not
//     answered (sse.go).
//
// The SDK behaviour each one answers is cited where it is done, by the
// SDK's file and function (go-sdk v1.8.0, package mcp).

// RetryHint is the reconnection delay announced at the start of every SSE
// stream (the SSE retry field).
const RetryHint = time.Second

// rpcMessage is what the wrapper reads of a POSTed message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// serverMethod reports whether a client may send this request to this
// server. A method outside the list is answered with -32601 before the
// SDK sees it: streamableServerConn.servePOST (streamable.go) checks each
// request with checkRequest and, for a session-based protocol version,
// answers an unknown method with http.Error, HTTP 400 and a plain-text
// body (-32601 only for 2026-07-28), which a JSON-RPC client cannot read
// as an error of its request.
func serverMethod(method string) bool {
	switch method {
	case "initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "completion/complete",
		"prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// protocol is the wrapper described at the top of this file.
func (s *Server) protocol(idle *idleTracker, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		switch r.Method {
		case http.MethodPost:
			s.post(idle, next, w, r, sid)
		case http.MethodGet:
			if sid == "" || !s.known(sid) {
				next.ServeHTTP(&retryWriter{ResponseWriter: w}, r)
				return
			}
			idle.begin(sid)
			defer idle.end(sid)
			s.stream(sid, 1)
			defer s.stream(sid, -1)
			// Without Last-Event-ID, streamableServerConn.serveGET
			// (streamable.go) starts from index -1 and acquireStream replays
			// every stored event of the standalone stream; name the last one
			// written to the client instead (sse.go).
			if len(r.Header.Values("Last-Event-ID")) == 0 {
				if last := s.lastDelivered(sid); last != "" {
					r.Header.Set("Last-Event-ID", last)
				}
			}
			next.ServeHTTP(newSSEWriter(&retryWriter{ResponseWriter: w}, s, sid), r)
		case http.MethodDelete:
			idle.forget(sid)
			next.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) post(idle *idleTracker, next http.Handler, w http.ResponseWriter, r *http.Request, sid string) {
	// The body is read here, before the SDK bounds it, so it gets the
	// bound StreamableHTTPHandler.ServeHTTP (streamable.go) would give it.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	if err != nil {
		http.Error(w, "runbox: request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m rpcMessage
	call := json.Unmarshal(body, &m) == nil && m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case call && sid == "" && m.Method != "initialize":
		// StreamableHTTPHandler.serveStatefulPOST (streamable.go) opens a
		// new session for any POST without Mcp-Session-Id; ServerSession.handle
		// (server.go) then refuses the call as "invalid during session
		// initialization" inside an HTTP 200 stream, and the session is
		// closed again. The specification wants HTTP 400.
		writeRPCError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidRequest,
			"runbox: bad request: the Mcp-Session-Id header is required (initialize first)")
		return
	case call && !serverMethod(m.Method):
		writeRPCError(w, http.StatusOK, m.ID, jsonrpc.CodeMethodNotFound, "runbox: method not found: "+strconv.Quote(m.Method))
		return
	case call && sid == "" && m.Method == "initialize":
		// The cap is checked here and again in admit: by the time the
		// initialize reaches the receiving middleware, servePOST
		// (streamable.go) has already set Mcp-Session-Id on the response and
		// started an HTTP 200 stream, so a refusal there still hands the
		// client a session id.
		if err := s.roomFor(); err != nil {
			w.Header().Set("Retry-After", "5")
			writeRPCError(w, http.StatusServiceUnavailable, m.ID, codeServerBusy, err.Error())
			return
		}
		rw := &retryWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if id := w.Header().Get("Mcp-Session-Id"); id != "" && s.known(id) {
			idle.begin(id)
			idle.end(id)
		}
		return
	}
	if sid == "" || !s.known(sid) {
		next.ServeHTTP(&retryWriter{ResponseWriter: w}, r)
		return
	}
	idle.begin(sid)
	defer idle.end(sid)
	// The SDK answers a cancelled request anyway (see sse.go); note the
	// cancellation so its answer is dropped.
	if m.Method == "notifications/cancelled" && len(m.ID) == 0 {
		s.noteCancelled(sid, body)
	}
	next.ServeHTTP(newSSEWriter(&retryWriter{ResponseWriter: w}, s, sid), r)
}

// codeServerBusy is the JSON-RPC error code (in the implementation-defined
// server error range) of a refusal for want of room: the session cap.
const codeServerBusy = -32000

// writeRPCError answers a request with a JSON-RPC error object.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// retryWriter puts a retry: field before the first event of an SSE
// response. The SDK writes a retry field only in the close event of
// stream.close (streamable.go), sent when a handler calls CloseSSEStream;
// the priming event servePOST writes (protocol 2025-11-25 and later, with
// an EventStore) carries only an id, and a standalone stream
// (acquireStream) starts with a ": ok" comment. A client whose stream is
// cut otherwise falls back to its own reconnection delay.
type retryWriter struct {
	http.ResponseWriter
	started bool
}

func (rw *retryWriter) WriteHeader(code int) {
	if !rw.hint(code) {
		rw.ResponseWriter.WriteHeader(code)
	}
}

func (rw *retryWriter) Write(p []byte) (int, error) {
	rw.hint(http.StatusOK)
	return rw.ResponseWriter.Write(p)
}

// hint writes the header and the retry field if the response is an SSE
// stream just starting, and reports whether it wrote the header.
func (rw *retryWriter) hint(code int) bool {
	if rw.started {
		return false
	}
	rw.started = true
	if code != http.StatusOK || !strings.HasPrefix(rw.Header().Get("Content-Type"), "text/event-stream") {
		return false
	}
	rw.ResponseWriter.WriteHeader(code)
	io.WriteString(rw.ResponseWriter, "retry: "+strconv.FormatInt(RetryHint.Milliseconds(), 10)+"\n\n")
	return true
}

func (rw *retryWriter) FlushError() error {
	rw.hint(http.StatusOK)
	return http.NewResponseController(rw.ResponseWriter).Flush()
}

func (rw *retryWriter) Flush() {
	rw.hint(http.StatusOK)
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rw *retryWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// idleTracker closes a session whose client has had no request open
// (standalone stream included) for idle: its client is gone.
//
// It replaces StreamableHTTPOptions.SessionTimeout (left zero in
// HTTPHandler): the SDK's sessionInfo.startPOST and endPOST
// (streamable.go) hold its timer off only for POSTs (serveStatefulPOST);
// serveStatefulGET never calls them, so the SDK closes a session whose
// client is listening on its standalone stream and has nothing to send.
type idleTracker struct {
	idle time.Duration // <= 0: never
	// expire closes session id and reports whether it did; a session
	// kept (a keep-awake job runs in it) is watched for another idle.
	expire func(id string) bool

	mu      sync.Mutex
	stopped bool
	m       map[string]*idleEntry
}

type idleEntry struct {
	refs  int         // requests of the session open now
	timer *time.Timer // armed while refs is 0
	armed int         // counts the timers armed: a stale one sees it moved on
}

func newIdleTracker(idle time.Duration, expire func(string) bool) *idleTracker {
	return &idleTracker{idle: idle, expire: expire, m: map[string]*idleEntry{}}
}

// begin notes a request of session id starting: the session is not idle.
func (t *idleTracker) begin(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	if e == nil {
		e = &idleEntry{}
		t.m[id] = e
	}
	e.refs++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

// end notes a request ending; the last one arms the idle timer.
func (t *idleTracker) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	if e == nil {
		return
	}
	if e.refs--; e.refs > 0 || t.idle <= 0 || t.stopped {
		return
	}
	e.armed++
	armed := e.armed
	e.timer = time.AfterFunc(t.idle, func() { t.fire(id, e, armed) })
}

// fire closes the session if this timer is still its current one.
func (t *idleTracker) fire(id string, e *idleEntry, armed int) {
	t.mu.Lock()
	current := !t.stopped && t.m[id] == e && e.timer != nil && e.armed == armed && e.refs == 0
	if current {
		delete(t.m, id)
	}
	t.mu.Unlock()
	if current && !t.expire(id) {
		t.rearm(id)
	}
}

// rearm watches a session that expire kept for another idle, unless a
// request began meanwhile (its end arms the timer).
func (t *idleTracker) rearm(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, tracked := t.m[id]; tracked || t.stopped || t.idle <= 0 {
		return
	}
	e := &idleEntry{armed: 1}
	t.m[id] = e
	e.timer = time.AfterFunc(t.idle, func() { t.fire(id, e, 1) })
}

// forget drops a session the client ends itself (DELETE).
func (t *idleTracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil && e.refs == 0 {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(t.m, id)
	}
}

// stop disarms every timer (the server is closing and ends every session
// itself).
func (t *idleTracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for _, e := range t.m {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	clear(t.m)
}
