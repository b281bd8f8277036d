package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/runbox/runbox/internal/testproc"
)

// The markers Daytona's log stream puts before each stdout and stderr chunk.
var (
	stdoutMark = []byte{1, 1, 1}
	stderrMark = []byte{2, 2, 2}
)

type session struct {
	mu   sync.Mutex
	cmds map[string]*command
}

// command is one real process started for a session command.
type command struct {
	id, text string
	cmd      *exec.Cmd
	stdin    io.WriteCloser

	mu     sync.Mutex
	cond   *sync.Cond
	logs   []byte // marked chunks, in arrival order
	stdout []byte
	stderr []byte
	exit   *int
}

type streamWriter struct {
	c   *command
	err bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.err {
		c.logs = append(append(c.logs, stderrMark...), p...)
		c.stderr = append(c.stderr, p...)
	} else {
		c.logs = append(append(c.logs, stdoutMark...), p...)
		c.stdout = append(c.stdout, p...)
	}
	c.cond.Broadcast()
	return len(p), nil
}

// start runs text with /bin/sh in the sandbox's directory, in its own
// process group, with the sandbox's environment only.
func (b *sandbox) start(id, text string) (*command, error) {
	c := &command{id: id, text: text}
	c.cond = sync.NewCond(&c.mu)
	cmd := exec.Command("/bin/sh", "-c", text)
	cmd.Dir = b.dir
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + b.dir}
	for k, v := range b.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = streamWriter{c: c}, streamWriter{c: c, err: true}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 500 * time.Millisecond // a grandchild holding the pipes does not hold the command
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	c.stdin, c.cmd = in, cmd
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		}
		c.mu.Lock()
		c.exit = &code
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	return c, nil
}

func (c *command) kill() {
	if c.cmd.Process != nil {
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// wait waits for the exit, or ctx.
func (c *command) wait(ctx context.Context) (int, bool) {
	stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.exit == nil && ctx.Err() == nil {
		c.cond.Wait()
	}
	if c.exit == nil {
		return 0, false
	}
	return *c.exit, true
}

func (b *sandbox) killAll() {
	b.mu.Lock()
	var cmds []*command
	for _, s := range b.sessions {
		s.mu.Lock()
		for _, c := range s.cmds {
			cmds = append(cmds, c)
		}
		s.mu.Unlock()
	}
	b.sessions = map[string]*session{}
	ptys := make([]*ptySession, 0, len(b.ptys))
	for _, p := range b.ptys {
		ptys = append(ptys, p)
	}
	b.mu.Unlock()
	for _, c := range cmds {
		c.kill()
	}
	for _, p := range ptys {
		p.kill(b, true)
	}
	// A sandbox that stops loses every process, also those that left the
	// trees above (a daemon that detached itself, and what it runs).
	testproc.KillHome(b.dir)
}

func (s *Server) toolboxRoutes(mux *http.ServeMux) {
	h := func(pattern string, f func(http.ResponseWriter, *http.Request, *sandbox)) {
		mux.HandleFunc(pattern, s.withStarted(f))
	}
	h("POST /toolbox/{id}/process/session", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		var req struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.SessionID == "" {
			writeErr(w, http.StatusBadRequest, "sessionId is required")
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.sessions[req.SessionID] != nil {
			writeErr(w, http.StatusConflict, "session already exists")
			return
		}
		b.sessions[req.SessionID] = &session{cmds: map[string]*command{}}
		w.WriteHeader(http.StatusCreated)
	})
	h("DELETE /toolbox/{id}/process/session/{sid}", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.mu.Lock()
		ss := b.sessions[r.PathValue("sid")]
		delete(b.sessions, r.PathValue("sid"))
		b.mu.Unlock()
		if ss == nil {
			writeErr(w, http.StatusNotFound, "session not found")
			return
		}
		ss.mu.Lock()
		for _, c := range ss.cmds {
			c.kill()
		}
		ss.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	h("POST /toolbox/{id}/process/session/{sid}/exec", s.sessionExec)
	h("GET /toolbox/{id}/process/session/{sid}/command/{cid}", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		c := b.command(r.PathValue("sid"), r.PathValue("cid"))
		if c == nil {
			writeErr(w, http.StatusNotFound, "command not found")
			return
		}
		c.mu.Lock()
		m := map[string]any{"id": c.id, "command": c.text}
		if c.exit != nil {
			m["exitCode"] = *c.exit
		}
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, m)
	})
	h("GET /toolbox/{id}/process/session/{sid}/command/{cid}/logs", s.logs)
	h("POST /toolbox/{id}/process/session/{sid}/command/{cid}/input", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		c := b.command(r.PathValue("sid"), r.PathValue("cid"))
		if c == nil {
			writeErr(w, http.StatusNotFound, "command not found")
			return
		}
		var req struct {
			Data string `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		if _, err := io.WriteString(c.stdin, req.Data); err != nil {
			writeErr(w, http.StatusGone, "command input closed: "+err.Error())
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s.ptyRoutes(h)
	h("POST /toolbox/{id}/process/execute", s.execute)
	h("POST /toolbox/{id}/files/upload", s.upload)
	h("POST /toolbox/{id}/files/bulk-download", s.download)
	h("GET /toolbox/{id}/files/info", s.fileInfo)
	h("POST /toolbox/{id}/files/move", s.move)
	h("DELETE /toolbox/{id}/files", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		p := b.sandboxPath(r.URL.Query().Get("path"))
		if _, err := os.Lstat(p); err != nil {
			writeFSErr(w, err)
			return
		}
		rm := os.Remove
		if r.URL.Query().Get("recursive") == "true" {
			rm = os.RemoveAll
		}
		if err := rm(p); err != nil {
			writeFSErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h("POST /toolbox/{id}/files/permissions", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		mode, err := strconv.ParseUint(r.URL.Query().Get("mode"), 8, 32)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "mode: "+err.Error())
			return
		}
		if err := os.Chmod(b.sandboxPath(r.URL.Query().Get("path")), os.FileMode(mode)); err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// withStarted routes toolbox calls to a started sandbox, as Daytona's
// proxy does: a missing sandbox is 404, one that is not started is 409.
func (s *Server) withStarted(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
	return s.withSandbox(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.mu.Lock()
		st := b.state
		b.mu.Unlock()
		if st != "started" {
			writeErr(w, http.StatusConflict, "sandbox is not started (state "+st+")")
			return
		}
		h(w, r, b)
	})
}

func (b *sandbox) command(sid, cid string) *command {
	b.mu.Lock()
	ss := b.sessions[sid]
	b.mu.Unlock()
	if ss == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.cmds[cid]
}

func (s *Server) sessionExec(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Command  string `json:"command"`
		RunAsync bool   `json:"runAsync"`
		Async    bool   `json:"async"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	b.mu.Lock()
	ss := b.sessions[r.PathValue("sid")]
	b.mu.Unlock()
	if ss == nil {
		writeErr(w, http.StatusNotFound, "session not found")
		return
	}
	c, err := b.start(s.newID("cmd"), req.Command)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	ss.mu.Lock()
	ss.cmds[c.id] = c
	ss.mu.Unlock()
	if req.RunAsync || req.Async {
		writeJSON(w, http.StatusAccepted, map[string]any{"cmdId": c.id})
		return
	}
	c.stdin.Close()
	code, ok := c.wait(r.Context())
	if !ok {
		c.kill()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"cmdId": c.id, "exitCode": code,
		"stdout": string(c.stdout), "stderr": string(c.stderr), "output": string(c.stdout) + string(c.stderr)})
}

// logs streams a command's marked output over a websocket (follow=true)
// until it exits, then closes normally; without follow it returns what
// there is as text.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, b *sandbox) {
	c := b.command(r.PathValue("sid"), r.PathValue("cid"))
	if c == nil {
		writeErr(w, http.StatusNotFound, "command not found")
		return
	}
	if r.URL.Query().Get("follow") != "true" {
		c.mu.Lock()
		defer c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"output": string(c.stdout) + string(c.stderr), "stdout": string(c.stdout), "stderr": string(c.stderr)})
		return
	}
	up := websocket.Upgrader{}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	go func() { // notice the client going away
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				c.mu.Lock()
				c.cond.Broadcast()
				c.mu.Unlock()
				return
			}
		}
	}()
	sent := 0
	for {
		c.mu.Lock()
		for sent == len(c.logs) && c.exit == nil {
			c.cond.Wait()
		}
		chunk := bytes.Clone(c.logs[sent:])
		done := c.exit != nil
		c.mu.Unlock()
		sent += len(chunk)
		if len(chunk) > 0 {
			if err := conn.WriteMessage(websocket.BinaryMessage, chunk); err != nil {
				return
			}
		}
		if done {
			c.mu.Lock()
			rest := len(c.logs) - sent
			c.mu.Unlock()
			if rest == 0 {
				conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
				return
			}
		}
	}
}

// execute is /process/execute: combined output, HTTP 200 with the exit
// code whatever it is, 408 when the timeout (seconds) expires.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Timeout int    `json:"timeout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	c, err := b.start(s.newID("exec"), req.Command)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	c.stdin.Close()
	ctx := r.Context()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout)*time.Second)
		defer cancel()
	}
	code, ok := c.wait(ctx)
	if !ok {
		c.kill()
		writeErr(w, http.StatusRequestTimeout, "command execution timeout")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"exitCode": code, "result": string(c.stdout) + string(c.stderr)})
}

// sandboxPath resolves p as the sandbox sees it: relative to its home.
func (b *sandbox) sandboxPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.dir, p)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, b *sandbox) {
	p := r.URL.Query().Get("path")
	f, _, err := r.FormFile("file")
	if err != nil || p == "" {
		writeErr(w, http.StatusBadRequest, "path and file are required")
		return
	}
	defer f.Close()
	dst := b.sandboxPath(p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	out, err := os.Create(dst)
	if err == nil {
		_, err = io.Copy(out, f)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// download is /files/bulk-download: a multipart response with a "file"
// part, or an "error" part for a file that cannot be read.
func (s *Server) download(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Paths []string `json:"paths"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Paths) != 1 {
		writeErr(w, http.StatusBadRequest, "one path is required")
		return
	}
	mw := multipart.NewWriter(w)
	w.Header().Set("Content-Type", mw.FormDataContentType())
	data, err := os.ReadFile(b.sandboxPath(req.Paths[0]))
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, os.ErrNotExist) {
			code = http.StatusNotFound
		}
		part, _ := mw.CreateFormField("error")
		json.NewEncoder(part).Encode(map[string]any{"statusCode": code, "message": err.Error()})
		mw.Close()
		return
	}
	part, _ := mw.CreateFormFile("file", filepath.Base(req.Paths[0]))
	part.Write(data)
	mw.Close()
}

// writeFSErr answers a file-system error as the toolbox does: 404 for a
// missing file, 403 for a refused one, 400 otherwise.
func writeFSErr(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, os.ErrNotExist):
		writeErr(w, http.StatusNotFound, err.Error())
	case errors.Is(err, os.ErrPermission):
		writeErr(w, http.StatusForbidden, err.Error())
	default:
		writeErr(w, http.StatusBadRequest, err.Error())
	}
}

// fileInfo is /files/info: the fields the generated client requires.
func (s *Server) fileInfo(w http.ResponseWriter, r *http.Request, b *sandbox) {
	p := r.URL.Query().Get("path")
	fi, err := os.Stat(b.sandboxPath(p))
	if err != nil {
		writeFSErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": fi.Name(), "size": fi.Size(), "isDir": fi.IsDir(),
		"mode": fi.Mode().String(), "permissions": fmt.Sprintf("%#o", fi.Mode().Perm()),
		"modTime": fi.ModTime().UTC().Format(time.RFC3339), "owner": "daytona", "group": "daytona"})
}

// move is /files/move: a rename that refuses an existing destination
// (409) and a missing source or destination directory (404).
func (s *Server) move(w http.ResponseWriter, r *http.Request, b *sandbox) {
	src, dst := r.URL.Query().Get("source"), r.URL.Query().Get("destination")
	if src == "" || dst == "" {
		writeErr(w, http.StatusBadRequest, "source and destination paths are required")
		return
	}
	src, dst = b.sandboxPath(src), b.sandboxPath(dst)
	if _, err := os.Stat(src); err != nil {
		writeFSErr(w, err)
		return
	}
	if _, err := os.Stat(filepath.Dir(dst)); err != nil {
		writeFSErr(w, err)
		return
	}
	if _, err := os.Lstat(dst); err == nil {
		writeErr(w, http.StatusConflict, "destination already exists")
		return
	}
	if err := os.Rename(src, dst); err != nil {
		writeErr(w, http.StatusBadRequest, "failed to move file: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}
