package fake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// sandbox is one fake sandbox: a directory and the processes started in it.
type sandbox struct {
	id, name, snapshot, dockerfile, dir string
	labels, env                         map[string]string
	cpu, memory, disk                   int32
	autoStop                            *int32
	blockAll                            bool
	allowList                           string

	mu       sync.Mutex
	state    string
	active   time.Time // the last call that named it (Daytona's "event")
	stops    int       // times the auto-stop clock stopped it
	gets     int       // reads since creation: the first one still sees "creating"
	sessions map[string]*session
	ptys     map[string]*ptySession
}

func (b *sandbox) info() Sandbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Sandbox{ID: b.id, Name: b.name, State: b.state, Labels: b.labels, Env: b.env,
		CPU: b.cpu, Memory: b.memory, Disk: b.disk, AutoStop: b.autoStop, AutoStops: b.stops, Snapshot: b.snapshot,
		Dockerfile: b.dockerfile, Dir: b.dir, NetworkBlockAll: b.blockAll, NetworkAllowList: b.allowList}
}

// json is the sandbox as the generated client's Sandbox model requires it.
func (b *sandbox) json(toolbox string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := map[string]any{
		"id": b.id, "organizationId": "org-fake", "name": b.name, "user": "daytona",
		"env": b.env, "labels": b.labels, "public": false, "networkBlockAll": b.blockAll,
		"target": "us", "cpu": b.cpu, "gpu": 0, "memory": b.memory, "disk": b.disk,
		"state": b.state, "toolboxProxyUrl": toolbox,
		"createdAt": time.Now().UTC().Format(time.RFC3339),
	}
	if b.allowList != "" {
		m["networkAllowList"] = b.allowList
	}
	if b.autoStop != nil {
		m["autoStopInterval"] = *b.autoStop
	}
	if b.snapshot != "" {
		m["snapshot"] = b.snapshot
	}
	return m
}

func (s *Server) toolboxURL() string { return s.srv.URL + "/toolbox" }

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/sandbox", s.create)
	mux.HandleFunc("GET /api/sandbox/paginated", s.list)
	mux.HandleFunc("GET /api/sandbox/{id}", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.mu.Lock()
		if (b.state == "creating" || b.state == "pending_build") && b.gets > 0 {
			b.state = "started"
		}
		b.gets++
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
	}))
	mux.HandleFunc("POST /api/sandbox/{id}/start", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.mu.Lock()
		b.state = "started"
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
	}))
	mux.HandleFunc("POST /api/sandbox/{id}/stop", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.killAll()
		b.mu.Lock()
		b.state = "stopped"
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
	}))
	mux.HandleFunc("DELETE /api/sandbox/{id}", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		s.Delete(b.id)
		b.mu.Lock()
		b.state = "destroyed"
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
	}))
	mux.HandleFunc("POST /api/sandbox/{id}/autostop/{interval}", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		v, err := strconv.ParseFloat(r.PathValue("interval"), 32)
		if err != nil || v < 0 {
			writeErr(w, http.StatusBadRequest, "invalid auto-stop interval "+r.PathValue("interval"))
			return
		}
		iv := int32(v)
		b.mu.Lock()
		b.autoStop = &iv
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
	}))
	mux.HandleFunc("PUT /api/sandbox/{id}/labels", s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		var req struct {
			Labels map[string]string `json:"labels"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		b.mu.Lock()
		b.labels = req.Labels
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"labels": req.Labels})
	}))
	s.toolboxRoutes(mux)
}

func (s *Server) withSandbox(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b := s.get(r.PathValue("id"))
		if b == nil {
			writeErr(w, http.StatusNotFound, "Sandbox with ID or name "+r.PathValue("id")+" not found")
			return
		}
		b.mu.Lock()
		b.active = time.Now()
		b.mu.Unlock()
		h(w, r, b)
	}
}

// create makes a sandbox in state "creating" ("pending_build" when it is
// built from an image); it reads "started" from its second read on, so
// the SDK's wait-for-start loop has to poll.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name             string            `json:"name"`
		Snapshot         string            `json:"snapshot"`
		Env              map[string]string `json:"env"`
		Labels           map[string]string `json:"labels"`
		CPU              int32             `json:"cpu"`
		Memory           int32             `json:"memory"`
		Disk             int32             `json:"disk"`
		AutoStopInterval *int32            `json:"autoStopInterval"`
		NetworkBlockAll  bool              `json:"networkBlockAll"`
		NetworkAllowList string            `json:"networkAllowList"`
		BuildInfo        *struct {
			DockerfileContent string `json:"dockerfileContent"`
		} `json:"buildInfo"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	id := s.newID("sbx")
	dir := filepath.Join(s.root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	name := req.Name
	if name == "" {
		name = id
	}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	if req.Labels == nil {
		req.Labels = map[string]string{}
	}
	b := &sandbox{id: id, name: name, snapshot: req.Snapshot, dir: dir, labels: req.Labels, env: req.Env,
		cpu: req.CPU, memory: req.Memory, disk: req.Disk, autoStop: req.AutoStopInterval,
		blockAll: req.NetworkBlockAll, allowList: req.NetworkAllowList, state: "creating", active: time.Now(),
		sessions: map[string]*session{}, ptys: map[string]*ptySession{}}
	if req.BuildInfo != nil {
		b.dockerfile = req.BuildInfo.DockerfileContent
		b.state = "pending_build" // an image is built before it starts
	}
	s.mu.Lock()
	s.sandboxes[id] = b
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, b.json(s.toolboxURL()))
}

// list answers /sandbox/paginated, filtered by the labels query (JSON).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	var want map[string]string
	if l := r.URL.Query().Get("labels"); l != "" {
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			writeErr(w, http.StatusBadRequest, "labels: "+err.Error())
			return
		}
	}
	s.mu.Lock()
	var boxes []*sandbox
	for _, b := range s.sandboxes {
		boxes = append(boxes, b)
	}
	s.mu.Unlock()
	items := []map[string]any{}
	for _, b := range boxes {
		b.mu.Lock()
		ok := labelsMatch(b.labels, want)
		b.mu.Unlock()
		if ok {
			items = append(items, b.json(s.toolboxURL()))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "total": len(items), "page": 1, "totalPages": 1})
}

// readBody reads up to 1 MiB of the body for the log and puts it back.
func readBody(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	if len(data) > 1<<20 {
		data = data[:1<<20]
	}
	return string(data)
}
