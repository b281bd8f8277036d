package verceltest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Config configures the fake.
type Config struct {
	// Token, TeamID and ProjectID are the credentials it accepts.
	Token, TeamID, ProjectID string
	// Dir holds the sandboxes' directories. Required.
	Dir string
}

// Request is one API call as the fake received it.
type Request struct {
	Method, Path string
	Query        string
	// Header holds every header but Authorization; AuthOK says whether
	// that one was right.
	Header http.Header
	AuthOK bool
	Body   []byte
}

// Server is the fake API.
type Server struct {
	cfg Config
	lis net.Listener
	srv *http.Server
	wg  sync.WaitGroup // the processes' and streams' goroutines

	mu        sync.Mutex
	requests  []Request
	sandboxes map[string]*sandbox // by name
	sessions  map[string]*session // by id
	wsTokens  map[string]*session // interactive tokens not yet used
	closed    bool
}

// Start listens on a loopback port and serves.
func Start(cfg Config) (*Server, error) {
	if cfg.Dir == "" || cfg.Token == "" {
		return nil, fmt.Errorf("verceltest: Config.Dir and Config.Token are required")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("verceltest: listen: %w", err)
	}
	s := &Server{cfg: cfg, lis: lis, sandboxes: map[string]*sandbox{}, sessions: map[string]*session{}, wsTokens: map[string]*session{}}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 30 * time.Second}
	s.wg.Add(1)
	go func() { // owned by Stop
		defer s.wg.Done()
		s.srv.Serve(lis)
	}()
	return s, nil
}

// URL is the API's base URL (what VERCEL_API_URL would be).
func (s *Server) URL() string { return "http://" + s.lis.Addr().String() }

// Stop stops every session, closes the server and waits for every
// goroutine it started.
func (s *Server) Stop() {
	s.mu.Lock()
	s.closed = true
	var all []*session
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.stop("stopped")
	}
	s.srv.Close()
	s.wg.Wait()
}

// Requests is every call received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// StopSandbox stops the named sandbox's current session, as Vercel does
// at its timeout or when someone stops it from the dashboard: its
// processes are killed and its streams end with an error line.
func (s *Server) StopSandbox(name string) error {
	s.mu.Lock()
	sb := s.sandboxes[name]
	s.mu.Unlock()
	if sb == nil || sb.current() == nil {
		return fmt.Errorf("verceltest: no sandbox %q", name)
	}
	sb.current().stop("stopped")
	return nil
}

// Sandboxes lists the names of the sandboxes that exist, sorted.
func (s *Server) Sandboxes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.sandboxes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Running lists the ids of the sessions that run, sorted.
func (s *Server) Running() []string {
	s.mu.Lock()
	var all []*session
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var ids []string
	for _, ss := range all {
		if ss.status() == "running" {
			ids = append(ids, ss.id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Dir is the named sandbox's directory ("" when there is none).
func (s *Server) Dir(name string) string {
	s.mu.Lock()
	sb := s.sandboxes[name]
	s.mu.Unlock() // before sb.mu: newSession takes sb.mu, then s.mu
	if sb == nil {
		return ""
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.dir
}

func randomID(prefix string) string {
	b := make([]byte, 10)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// apiError writes the API's error shape.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// guard records the call and checks the token and the team, as the real
// API does on every route.
func (s *Server) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", "cannot read the body")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		hdr := r.Header.Clone()
		auth := hdr.Get("Authorization")
		hdr.Del("Authorization")
		ok := auth == "Bearer "+s.cfg.Token
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: hdr, AuthOK: ok, Body: body})
		s.mu.Unlock()
		switch {
		case auth == "":
			apiError(w, http.StatusUnauthorized, "unauthorized", "Missing authentication token")
		case !ok:
			apiError(w, http.StatusForbidden, "forbidden", "Not authorized")
		case r.URL.Query().Get("teamId") != s.cfg.TeamID:
			apiError(w, http.StatusForbidden, "forbidden", "You don't have access to this team")
		default:
			h(w, r)
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	g := func(pattern string, h http.HandlerFunc) { mux.HandleFunc(pattern, s.guard(h)) }
	g("POST /v2/sandboxes", s.createSandbox)
	g("POST /v3/sandboxes", s.createSandbox)
	g("GET /v2/sandboxes", s.listSandboxes)
	g("GET /v2/sandboxes/{name}", s.getSandbox)
	g("DELETE /v2/sandboxes/{name}", s.deleteSandbox)
	g("GET /v2/sandboxes/sessions/{id}", s.withSession(s.getSession, false))
	g("POST /v2/sandboxes/sessions/{id}/stop", s.withSession(s.stopSession, false))
	g("POST /v2/sandboxes/sessions/{id}/extend-timeout", s.withSession(s.extendTimeout, true))
	g("POST /v2/sandboxes/sessions/{id}/network-policy", s.withSession(s.networkPolicy, true))
	g("POST /v2/sandboxes/sessions/{id}/cmd", s.withSession(s.runCommand, true))
	g("GET /v2/sandboxes/sessions/{id}/cmd/{cmd}", s.withSession(s.getCommand, false))
	g("GET /v2/sandboxes/sessions/{id}/cmd/{cmd}/logs", s.withSession(s.commandLogs, false))
	g("POST /v2/sandboxes/sessions/{id}/cmd/{cmd}/kill", s.withSession(s.killCommand, true))
	g("POST /v2/sandboxes/sessions/{id}/fs/write", s.withSession(s.writeFiles, true))
	g("POST /v2/sandboxes/sessions/{id}/fs/read", s.withSession(s.readFile, true))
	g("POST /v2/sandboxes/sessions/{id}/fs/mkdir", s.withSession(s.mkdir, true))
	g("POST /v2/sandboxes/sessions/{id}/interactive", s.withSession(s.openInteractive, true))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("GET /interactive/{id}", s.interactive)
	return mux
}

// sandbox is one named sandbox: a directory and its current session.
type sandbox struct {
	name, dir  string
	persistent bool
	runtime    string
	vcpus      int
	timeout    int64 // ms
	policy     json.RawMessage
	env        map[string]string
	tags       map[string]string
	created    int64

	mu  sync.Mutex
	cur *session
}

func (sb *sandbox) current() *session {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.cur
}

func (sb *sandbox) json(ss *session) map[string]any {
	sb.mu.Lock()
	policy := sb.policy
	sb.mu.Unlock()
	m := map[string]any{
		"name": sb.name, "persistent": sb.persistent, "runtime": sb.runtime, "vcpus": sb.vcpus,
		"memory": 2048 * sb.vcpus, "timeout": sb.timeout, "createdAt": sb.created, "updatedAt": sb.created,
		"currentSessionId": ss.id, "status": ss.status(), "cwd": ss.dir,
	}
	if sb.tags != nil {
		m["tags"] = sb.tags
	}
	if policy != nil {
		m["networkPolicy"] = policy
	}
	return m
}

type createRequest struct {
	ProjectID  string `json:"projectId"`
	Name       string `json:"name"`
	Runtime    string `json:"runtime"`
	Timeout    int64  `json:"timeout"`
	Persistent bool   `json:"persistent"`
	Resources  *struct {
		VCPUs int `json:"vcpus"`
	} `json:"resources"`
	Ports         []int             `json:"ports"`
	NetworkPolicy json.RawMessage   `json:"networkPolicy"`
	Env           map[string]string `json:"env"`
	Tags          map[string]string `json:"tags"`
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "invalid JSON: "+err.Error())
		return
	}
	if req.ProjectID != s.cfg.ProjectID {
		apiError(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	if len(req.Ports) > 15 {
		apiError(w, http.StatusBadRequest, "bad_request", "at most 15 ports")
		return
	}
	if req.Name == "" {
		req.Name = randomID("sbx_")
	}
	sb := &sandbox{name: req.Name, persistent: req.Persistent, runtime: req.Runtime, vcpus: 2, timeout: req.Timeout,
		policy: req.NetworkPolicy, env: req.Env, tags: req.Tags, created: time.Now().UnixMilli()}
	if sb.runtime == "" {
		sb.runtime = "node24"
	}
	if req.Resources != nil && req.Resources.VCPUs > 0 {
		sb.vcpus = req.Resources.VCPUs
	}
	if sb.timeout == 0 {
		sb.timeout = 300_000
	}
	s.mu.Lock()
	if s.sandboxes[sb.name] != nil {
		s.mu.Unlock()
		apiError(w, http.StatusConflict, "conflict", "a sandbox named "+sb.name+" exists")
		return
	}
	s.sandboxes[sb.name] = sb
	s.mu.Unlock()
	ss, err := s.newSession(sb)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	writeJSON(w, map[string]any{"sandbox": sb.json(ss), "session": ss.json(), "routes": []any{}})
}

// newSession starts a session of sb: in the directory it had when it is
// persistent (its snapshot), else in a fresh one.
func (s *Server) newSession(sb *sandbox) (*session, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.dir == "" || !sb.persistent {
		if sb.dir != "" {
			os.RemoveAll(sb.dir)
		}
		dir, err := os.MkdirTemp(s.cfg.Dir, "sandbox-*")
		if err != nil {
			return nil, err
		}
		sb.dir = filepath.Clean(dir)
	}
	ss := newSession(s, sb)
	sb.cur = ss
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	return ss, nil
}

func (s *Server) sandboxNamed(w http.ResponseWriter, r *http.Request) *sandbox {
	if q := r.URL.Query().Get("projectId"); q != "" && q != s.cfg.ProjectID {
		apiError(w, http.StatusNotFound, "not_found", "Project not found")
		return nil
	}
	s.mu.Lock()
	sb := s.sandboxes[r.PathValue("name")]
	s.mu.Unlock()
	if sb == nil {
		apiError(w, http.StatusNotFound, "not_found", "Sandbox not found")
	}
	return sb
}

// getSandbox returns a sandbox and its session; with resume=true a
// stopped one gets a new session first.
func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	sb := s.sandboxNamed(w, r)
	if sb == nil {
		return
	}
	ss := sb.current()
	resumed := false
	if ss.status() != "running" && r.URL.Query().Get("resume") == "true" {
		var err error
		if ss, err = s.newSession(sb); err != nil {
			apiError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		resumed = true
	}
	writeJSON(w, map[string]any{"sandbox": sb.json(ss), "session": ss.json(), "routes": []any{}, "resumed": resumed})
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Query().Get("project"); p != "" && p != s.cfg.ProjectID {
		apiError(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	s.mu.Lock()
	var all []*sandbox
	for _, sb := range s.sandboxes {
		all = append(all, sb)
	}
	s.mu.Unlock()
	list := []any{}
	for _, sb := range all {
		list = append(list, sb.json(sb.current()))
	}
	writeJSON(w, map[string]any{"sandboxes": list, "pagination": map[string]any{"count": len(list), "next": nil}})
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	sb := s.sandboxNamed(w, r)
	if sb == nil {
		return
	}
	ss := sb.current()
	ss.stop("stopped")
	s.mu.Lock()
	delete(s.sandboxes, sb.name)
	s.mu.Unlock()
	os.RemoveAll(ss.dir)
	writeJSON(w, map[string]any{"sandbox": sb.json(ss)})
}

// withSession finds the session of the path; running says the route
// needs it running (a stopped one answers 410 with sandbox_stopped).
func (s *Server) withSession(h func(http.ResponseWriter, *http.Request, *session), mustRun bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ss := s.sessions[r.PathValue("id")]
		s.mu.Unlock()
		if ss == nil {
			apiError(w, http.StatusNotFound, "not_found", "Session not found")
			return
		}
		if mustRun && ss.status() != "running" {
			apiError(w, http.StatusGone, "sandbox_stopped", "The sandbox session is "+ss.status())
			return
		}
		h(w, r, ss)
	}
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, ss *session) {
	writeJSON(w, map[string]any{"session": ss.json(), "routes": []any{}})
}

func (s *Server) stopSession(w http.ResponseWriter, r *http.Request, ss *session) {
	ss.stop("stopped")
	writeJSON(w, map[string]any{"session": ss.json(), "sandbox": ss.sb.json(ss)})
}

func (s *Server) extendTimeout(w http.ResponseWriter, r *http.Request, ss *session) {
	var req struct {
		Duration int64 `json:"duration"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Duration <= 0 {
		apiError(w, http.StatusBadRequest, "bad_request", "duration must be a positive number of milliseconds")
		return
	}
	ss.extend(req.Duration)
	writeJSON(w, map[string]any{"session": ss.json()})
}

func (s *Server) networkPolicy(w http.ResponseWriter, r *http.Request, ss *session) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "invalid JSON")
		return
	}
	ss.sb.mu.Lock()
	ss.sb.policy = raw
	ss.sb.mu.Unlock()
	writeJSON(w, map[string]any{"session": ss.json()})
}
