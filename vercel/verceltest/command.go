package verceltest

import (
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// logEntry is one chunk of a command's output.
type logEntry struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// command is one process started through the cmd route.
type command struct {
	id, name string
	args     []string
	cwd, sid string
	started  int64
	done     chan struct{} // closed when it has exited and its output is in

	mu       sync.Mutex
	pgid     int
	logs     []logEntry
	changed  chan struct{}
	exit     *int
	duration int64
	byStop   bool // it ended because its session stopped
}

func (c *command) json() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{"id": c.id, "name": c.name, "args": c.args, "cwd": c.cwd, "sessionId": c.sid,
		"exitCode": nil, "startedAt": c.started}
	if c.exit != nil {
		m["exitCode"], m["durationMs"] = *c.exit, c.duration
	}
	return m
}

// killGroup signals the command's process group while it runs;
// byStop marks that its session's stop is what ended it.
func (c *command) killGroup(sig syscall.Signal, byStop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exit == nil && c.pgid > 0 {
		c.byStop = c.byStop || byStop
		if byStop {
			killTree(c.pgid)
			return
		}
		syscall.Kill(-c.pgid, sig)
	}
}

// logWriter appends a stream's writes to the command's log.
type logWriter struct {
	c      *command
	stream string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	w.c.logs = append(w.c.logs, logEntry{Stream: w.stream, Data: string(p)})
	close(w.c.changed)
	w.c.changed = make(chan struct{})
	w.c.mu.Unlock()
	return len(p), nil
}

type runRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Wait    bool              `json:"wait"`
	Timeout int64             `json:"timeout"`
}

// runCommand starts the command (not through a shell: command and args
// as given), in its own process group; with wait it answers with the
// NDJSON stream of the command, its output and its end.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request, ss *session) {
	var req runRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command == "" {
		apiError(w, http.StatusBadRequest, "bad_request", "command is required")
		return
	}
	c, err := s.start(ss, req)
	if err != nil {
		apiError(w, http.StatusGone, "sandbox_stopped", err.Error())
		return
	}
	if !req.Wait {
		writeJSON(w, map[string]any{"command": c.json()})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	enc.Encode(map[string]any{"command": c.json()})
	flush()
	if !follow(r, c, enc, flush) {
		return
	}
	enc.Encode(map[string]any{"command": c.json()})
	flush()
}

// follow streams c's output until it ends, then says whether it ended
// on its own (false: the session stopped under it, which is written as
// an error line, or the client went away).
func follow(r *http.Request, c *command, enc *json.Encoder, flush func()) bool {
	next := 0
	for {
		c.mu.Lock()
		batch := c.logs[next:]
		next = len(c.logs)
		changed := c.changed
		c.mu.Unlock()
		for _, e := range batch {
			enc.Encode(e)
		}
		if len(batch) > 0 {
			flush()
		}
		select {
		case <-c.done:
			c.mu.Lock()
			rest, byStop := c.logs[next:], c.byStop
			c.mu.Unlock()
			for _, e := range rest {
				enc.Encode(e)
			}
			if byStop {
				enc.Encode(map[string]any{"stream": "error", "data": map[string]string{"code": "sandbox_stopped", "message": "The sandbox was stopped while the command ran"}})
			}
			flush()
			return !byStop
		case <-changed:
		case <-r.Context().Done():
			return false
		}
	}
}

// start runs req in the session. A program that cannot start ends at
// once with exit code 127 and the reason on stderr.
func (s *Server) start(ss *session, req runRequest) (*command, error) {
	cwd := req.Cwd
	if cwd == "" {
		cwd = ss.dir
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(ss.dir, cwd)
	}
	c := &command{id: randomID("cmd_"), name: req.Command, args: append([]string{}, req.Args...), cwd: cwd, sid: ss.id,
		started: time.Now().UnixMilli(), done: make(chan struct{}), changed: make(chan struct{})}
	cmd := exec.Command(req.Command, req.Args...)
	cmd.Dir, cmd.Env = cwd, ss.env(req.Env)
	cmd.Stdout, cmd.Stderr = logWriter{c, "stdout"}, logWriter{c, "stderr"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second // a grandchild holding the output does not hold the command
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != "running" {
		return nil, errors.New("the sandbox session is " + ss.st)
	}
	ss.cmds[c.id] = c
	if err := cmd.Start(); err != nil {
		logWriter{c, "stderr"}.Write([]byte(err.Error() + "\n"))
		code := 127
		c.exit = &code
		close(c.done)
		return c, nil
	}
	c.pgid = cmd.Process.Pid
	var timer *time.Timer
	if req.Timeout > 0 {
		timer = time.AfterFunc(time.Duration(req.Timeout)*time.Millisecond, func() { c.killGroup(syscall.SIGKILL, false) })
	}
	s.wg.Add(1)
	go func() { // owned by the process: ends when it has exited
		defer s.wg.Done()
		cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		code := exitCode(cmd)
		c.mu.Lock()
		c.exit, c.duration = &code, time.Now().UnixMilli()-c.started
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

func exitCode(cmd *exec.Cmd) int {
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

func (ss *session) command(w http.ResponseWriter, r *http.Request) *command {
	ss.mu.Lock()
	c := ss.cmds[r.PathValue("cmd")]
	ss.mu.Unlock()
	if c == nil {
		apiError(w, http.StatusNotFound, "not_found", "Command not found")
	}
	return c
}

// getCommand answers the command; with wait=true once it has ended.
func (s *Server) getCommand(w http.ResponseWriter, r *http.Request, ss *session) {
	c := ss.command(w, r)
	if c == nil {
		return
	}
	if r.URL.Query().Get("wait") == "true" {
		select {
		case <-c.done:
		case <-r.Context().Done():
			return
		}
		c.mu.Lock()
		byStop := c.byStop
		c.mu.Unlock()
		if byStop {
			apiError(w, http.StatusGone, "sandbox_stopped", "The sandbox was stopped while the command ran")
			return
		}
	}
	writeJSON(w, map[string]any{"command": c.json()})
}

// commandLogs streams the command's output from its start as NDJSON.
func (s *Server) commandLogs(w http.ResponseWriter, r *http.Request, ss *session) {
	c := ss.command(w, r)
	if c == nil {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	follow(r, c, json.NewEncoder(w), flush)
}

// killCommand signals the command's process group.
func (s *Server) killCommand(w http.ResponseWriter, r *http.Request, ss *session) {
	c := ss.command(w, r)
	if c == nil {
		return
	}
	var req struct {
		Signal json.RawMessage `json:"signal"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	sig := syscall.SIGTERM
	if len(req.Signal) > 0 {
		n, err := strconv.Atoi(string(req.Signal))
		if err != nil || n <= 0 || n > 64 {
			apiError(w, http.StatusBadRequest, "bad_request", "signal must be a signal number")
			return
		}
		sig = syscall.Signal(n)
	}
	c.killGroup(sig, false)
	writeJSON(w, map[string]any{"command": c.json()})
}
