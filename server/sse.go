package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// This file keeps two promises of the streamable HTTP transport that the
// SDK does not:
//
//   - a client that reconnects its standalone stream (GET) without
//     Last-Event-ID is sent only what it was not sent before: the SDK
//     replays the stream from its first event (streamableServerConn.serveGET
//     in streamable.go starts at index -1, and acquireStream sends every
//     event the EventStore holds after it), so a job's completion notice
//     came twice. The server notes the last event of the stream written to
//     the client and resumes after it, as if the client had named it;
//   - a request the client cancelled (notifications/cancelled) is not
//     answered: the SDK answers it anyway. Its canceller.Preempt
//     (transport.go) only cancels the handler's context
//     (jsonrpc2 Connection.Cancel), and Connection.processResult
//     (internal/jsonrpc2/conn.go) writes the handler's result or error
//     for every call. Its answer is dropped from every stream of the
//     session, replays included.

// sseWriter watches the SSE events the SDK writes to one response of the
// session sid.
//
// A standalone-stream event counts as delivered from just before it is
// written: a client that has seen it and reconnects at once must find it
// counted (the SDK writes under the stream's lock, but the reconnection
// is looked at before it waits for that lock: serveGET reads Last-Event-ID
// before acquireStream takes stream.mu). A write or flush that
// fails (the client is gone) takes the count back.
type sseWriter struct {
	http.ResponseWriter
	srv   *Server
	sid   string
	undo  bool // the count of the last event written awaits its flush
	prev  int  // the count before it (-1: none)
	moved int  // the index it was moved to
}

func newSSEWriter(w http.ResponseWriter, srv *Server, sid string) *sseWriter {
	return &sseWriter{ResponseWriter: w, srv: srv, sid: sid}
}

func (w *sseWriter) Write(p []byte) (int, error) {
	if w.srv.cancelledAnswer(w.sid, p) {
		return len(p), nil
	}
	if idx, ok := standaloneIndex(p); ok {
		w.prev, w.moved, w.undo = w.srv.noteDelivered(w.sid, idx), idx, true
	}
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.rollback()
	}
	return n, err
}

// FlushError flushes what was written; an event whose flush fails was
// not delivered.
func (w *sseWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err != nil {
		w.rollback()
	}
	w.undo = false
	return err
}

func (w *sseWriter) rollback() {
	if w.undo {
		w.srv.undoDelivered(w.sid, w.moved, w.prev)
		w.undo = false
	}
}

func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// standaloneIndex is the index of the standalone-stream event in p (an
// "id: _N" line; events of other streams are named "STREAM_N"). The form
// is the SDK's formatEventID (streamable.go): the standalone stream's id
// is "".
func standaloneIndex(p []byte) (int, bool) {
	for line := range bytes.Lines(p) {
		rest, ok := bytes.CutPrefix(line, []byte("id: _"))
		if !ok {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimRight(rest, "\r\n")))
		return n, err == nil && n >= 0
	}
	return 0, false
}

// noteDelivered records that the standalone stream's events up to idx
// were written to the client of session sid, and returns the index
// recorded before (-1: none).
func (s *Server) noteDelivered(sid string, idx int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.delivered[sid]
	if !ok {
		last = -1
	}
	if idx > last {
		s.delivered[sid] = idx
	}
	return last
}

// undoDelivered takes back noteDelivered(sid, idx) that returned prev,
// unless a later event was recorded since.
func (s *Server) undoDelivered(sid string, idx, prev int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.delivered[sid]; !ok || last != idx {
		return
	}
	if prev < 0 {
		delete(s.delivered, sid)
	} else {
		s.delivered[sid] = prev
	}
}

// lastDelivered is the Last-Event-ID of the last standalone-stream event
// written to the client of session sid, "" if none was.
func (s *Server) lastDelivered(sid string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx, ok := s.delivered[sid]; ok {
		return "_" + strconv.Itoa(idx)
	}
	return ""
}

// noteCancelled records the client's cancellation of a request, from the
// body of its notifications/cancelled. The protocol has request ids
// unique within a session, so the id stays cancelled for the session's
// life.
func (s *Server) noteCancelled(sid string, body []byte) {
	var m struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || validID(m.Params.RequestID) == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancelled[sid] == nil {
		s.cancelled[sid] = map[string]bool{}
	}
	s.cancelled[sid][idKey(m.Params.RequestID)] = true
}

// cancelledAnswer reports whether the SSE event p is the answer to a
// request the client of session sid cancelled.
func (s *Server) cancelledAnswer(sid string, p []byte) bool {
	s.mu.Lock()
	some := len(s.cancelled[sid]) > 0
	s.mu.Unlock()
	if !some {
		return false
	}
	var data []byte
	for line := range bytes.Lines(p) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimSpace(rest)...)
		}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.Method != nil || validID(m.ID) == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled[sid][idKey(m.ID)]
}
