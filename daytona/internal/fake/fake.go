// Package fake is a Daytona control plane and toolbox on loopback, for
// tests: it speaks the REST routes and JSON shapes that the official Go
// SDK's generated clients send and require, and backs every sandbox with
// a real directory on this machine and every command with a real process
// started in it. It records each request (auth header, route, body) so
// tests can check what crossed the wire.
//
// It models what the SDK documents and handles: sandbox states (creating →
// started, stopped, archived), 401 for a wrong key, 404 for a missing
// sandbox, combined output on /process/execute with HTTP 200 and the exit
// code of a failing command, session commands whose logs stream over a
// websocket with the SDK's stdout/stderr markers, PTY sessions (a login
// shell on a real pseudo-terminal behind the toolbox's websocket
// framing: see pty.go), file info, move (refusing an existing
// destination) and delete, and a toolbox that refuses work while its
// sandbox is not started. A sandbox that is stopped, archived or deleted
// loses every process at once; the PTY kill route takes a session's tree
// leaves first, as the toolbox does.
package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string // with the query
	Auth   string // the Authorization header
	Body   string // the body as sent (JSON, or a multipart upload)
}

// Server is the fake. Close stops it and every process it started.
type Server struct {
	// APIURL is the control plane's base URL, for DAYTONA_API_URL.
	APIURL string
	// Key is the API key it accepts.
	Key string

	srv  *httptest.Server
	root string
	seq  atomic.Int64

	mu        sync.Mutex
	log       []Request
	sandboxes map[string]*sandbox
	clock     chan struct{} // closed to stop the auto-stop clock
	clockDone chan struct{}

	deepestQueue atomic.Int64 // see DeepestPTYQueue
}

// DeepestPTYQueue is the most output pieces any PTY client has had queued
// at once. The toolbox drops a client whose queue holds ptySendQueue.
func (s *Server) DeepestPTYQueue() int { return int(s.deepestQueue.Load()) }

// New starts a fake accepting key, with its sandboxes' directories under
// root (a test's temporary directory).
func New(key, root string) *Server {
	s := &Server{Key: key, root: root, sandboxes: map[string]*sandbox{}}
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(s.record(mux))
	s.APIURL = s.srv.URL + "/api"
	return s
}

// Close stops the server and kills every command still running.
func (s *Server) Close() {
	s.StopAutoStop()
	s.srv.CloseClientConnections()
	s.srv.Close()
	for _, b := range s.all() {
		b.killAll()
	}
}

// all is every sandbox that exists now.
func (s *Server) all() []*sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	boxes := make([]*sandbox, 0, len(s.sandboxes))
	for _, b := range s.sandboxes {
		boxes = append(boxes, b)
	}
	return boxes
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Sandbox describes one sandbox as the fake holds it.
type Sandbox struct {
	ID, Name, State           string
	Labels, Env               map[string]string
	CPU, Memory, Disk         int32
	AutoStop                  *int32
	AutoStops                 int // times the auto-stop clock stopped it
	Snapshot, Dockerfile, Dir string
	NetworkBlockAll           bool
	NetworkAllowList          string
}

// Sandboxes lists the sandboxes that exist.
func (s *Server) Sandboxes() []Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sandbox
	for _, b := range s.sandboxes {
		out = append(out, b.info())
	}
	return out
}

// SetState changes a sandbox's state behind the client's back, as
// Daytona's auto-stop or a user's dashboard would: "stopped" or
// "archived" kill its processes.
func (s *Server) SetState(id, state string) error {
	b := s.get(id)
	if b == nil {
		return fmt.Errorf("fake: no sandbox %s", id)
	}
	if state != "started" {
		b.killAll()
	}
	b.mu.Lock()
	b.state = state
	b.mu.Unlock()
	return nil
}

// RunAutoStop starts Daytona's auto-stop clock, with minute as the length
// of one of its minutes: a started sandbox that no call has named for
// its auto-stop interval (15 when it was given none; 0 is never) is
// stopped, its processes killed, as Daytona stops it whatever runs in
// it. Idle time counts from the clock's start at the earliest: a test
// starts it once its sandboxes are set up. StopAutoStop (or Close) stops
// it.
func (s *Server) RunAutoStop(minute time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clock != nil {
		return
	}
	s.clock, s.clockDone = make(chan struct{}), make(chan struct{})
	go s.autoStop(minute, time.Now(), s.clock, s.clockDone)
}

// StopAutoStop stops the clock RunAutoStop started, if it runs.
func (s *Server) StopAutoStop() {
	s.mu.Lock()
	stop, done := s.clock, s.clockDone
	s.clock = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (s *Server) autoStop(minute time.Duration, since time.Time, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(minute / 10)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, b := range s.all() {
			if b.idleFor(minute, since) {
				b.killAll()
			}
		}
	}
}

// idleFor marks b stopped when it is started and idle past its auto-stop
// interval, and reports whether it did.
func (b *sandbox) idleFor(minute time.Duration, since time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	interval := int32(15)
	if b.autoStop != nil {
		interval = *b.autoStop
	}
	if b.active.After(since) {
		since = b.active
	}
	if b.state != "started" || interval == 0 || time.Since(since) < time.Duration(interval)*minute {
		return false
	}
	b.state = "stopped"
	b.stops++
	return true
}

// Delete removes a sandbox behind the client's back.
func (s *Server) Delete(id string) error {
	s.mu.Lock()
	b := s.sandboxes[id]
	delete(s.sandboxes, id)
	s.mu.Unlock()
	if b == nil {
		return fmt.Errorf("fake: no sandbox %s", id)
	}
	b.killAll()
	return os.RemoveAll(b.dir)
}

func (s *Server) get(idOrName string) *sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.sandboxes[idOrName]; b != nil {
		return b
	}
	for _, b := range s.sandboxes {
		if b.name == idOrName {
			return b
		}
	}
	return nil
}

// record logs the request (bodies up to 1 MiB) and checks the key.
func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		s.mu.Lock()
		s.log = append(s.log, Request{Method: r.Method, Path: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"), Body: body})
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.Key {
			writeErr(w, http.StatusUnauthorized, "Unauthorized: invalid API key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeErr writes Daytona's error body.
func writeErr(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"statusCode": code, "message": msg, "error": http.StatusText(code)})
}

func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s-%04d", prefix, s.seq.Add(1))
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
