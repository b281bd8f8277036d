package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"
)

// The toolbox's PTY sessions, as the real one serves them: a login shell
// (`<shell> -i -l`) on a real pseudo-terminal, its output broadcast to
// every websocket client as binary messages, every message a client sends
// (text or binary) written to the terminal as it is, a {"type":"control",
// "status":"connected"} text message once a client is attached, and the
// shell's end reported by a close frame whose reason is
// {"exitCode":N,"exitReason":...} (1000 for exit 0, 1011 otherwise).
// Output produced while no client is attached is lost, as it is there.

const (
	ptyWriteWait = 10 * time.Second // a client's write deadline
	ptyReadLimit = 64 << 10         // the largest message a client may send
	ptySendQueue = 256              // messages queued per client before it is dropped as slow
)

type ptySession struct {
	id, cwd    string
	envs       map[string]string
	cols, rows uint16
	created    time.Time
	lazy       bool

	mu      sync.Mutex
	active  bool
	used    bool // started once: a session never restarts
	cmd     *exec.Cmd
	ptmx    *os.File
	clients map[*ptyClient]struct{}
	in      chan []byte
	done    chan struct{} // closed when the shell has ended or was killed
	ended   bool
	// deepest is the server's high-water mark of any client's queue.
	deepest *atomic.Int64
}

type ptyClient struct {
	conn   *websocket.Conn
	wmu    sync.Mutex // one writer at a time on the connection
	send   chan []byte
	bye    chan []byte // the close frame, written once send is empty
	closed chan struct{}
	once   sync.Once
}

func (c *ptyClient) write(typ int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(ptyWriteWait))
	return c.conn.WriteMessage(typ, data)
}

func (c *ptyClient) close(code int, reason string) {
	c.closeWith(websocket.FormatCloseMessage(code, reason))
}

func (c *ptyClient) closeWith(frame []byte) {
	c.once.Do(func() {
		c.write(websocket.CloseMessage, frame)
		c.conn.Close()
		close(c.closed)
	})
}

// closeAfterOutput closes the client once the output queued for it is
// written, as the toolbox sends a session's last output before the frame
// that reports its end; a writer that is stuck or gone gets the frame
// after one write deadline.
func (c *ptyClient) closeAfterOutput(code int, reason string) {
	frame := websocket.FormatCloseMessage(code, reason)
	select {
	case c.bye <- frame:
	default:
	}
	select {
	case <-c.closed:
	case <-time.After(ptyWriteWait):
		c.closeWith(frame)
	}
}

func (p *ptySession) info() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return map[string]any{"id": p.id, "cwd": p.cwd, "envs": p.envs, "cols": p.cols, "rows": p.rows,
		"createdAt": p.created.UTC().Format(time.RFC3339), "active": p.active, "lazyStart": p.lazy}
}

// shell is what the toolbox starts in a PTY: bash when there is one.
func shell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// start runs the login shell on a new terminal of the session's size.
func (b *sandbox) startPTY(p *ptySession) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used {
		return errors.New("PTY session has already been used and cannot be restarted")
	}
	p.used = true
	cmd := exec.Command(shell(), "-i", "-l")
	cmd.Dir = p.cwd
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + b.dir}
	for k, v := range b.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range p.envs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: p.rows, Cols: p.cols})
	if err != nil {
		return fmt.Errorf("pty.StartWithSize: %w", err)
	}
	p.cmd, p.ptmx, p.active = cmd, ptmx, true
	read := make(chan struct{})
	go p.readLoop(ptmx, read)
	go p.inputLoop(ptmx)
	go p.reap(b, read)
	return nil
}

// readLoop broadcasts the terminal's output until it ends.
func (p *ptySession) readLoop(ptmx *os.File, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := ptmx.Read(buf)
		if n > 0 {
			p.broadcast(append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			return
		}
	}
}

// inputLoop writes what clients send to the terminal, in arrival order.
func (p *ptySession) inputLoop(ptmx *os.File) {
	for {
		select {
		case <-p.done:
			return
		case data := <-p.in:
			if _, err := ptmx.Write(data); err != nil {
				return
			}
		}
	}
}

// reap waits for the shell, lets the output it left reach the clients,
// and closes them with its exit code.
func (p *ptySession) reap(b *sandbox, read <-chan struct{}) {
	err := p.cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case err != nil:
		code = 1
	}
	select {
	case <-read:
	case <-time.After(500 * time.Millisecond): // a descendant holds the terminal open
	}
	p.end(b, code)
}

// end marks the session over, closes its clients with code and forgets it.
func (p *ptySession) end(b *sandbox, code int) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended, p.active = true, false
	close(p.done)
	clients := p.clients
	p.clients = map[*ptyClient]struct{}{}
	ptmx := p.ptmx
	p.mu.Unlock()
	wsCode, reason := websocket.CloseNormalClosure, ""
	if code != 0 {
		wsCode = websocket.CloseInternalServerErr
		r := "non-zero exit"
		switch {
		case code == 137:
			r = "SIGKILL"
		case code == 143:
			r = "SIGTERM"
		case code > 128:
			r = "signal " + strconv.Itoa(code-128)
		}
		reason = r
	}
	data := map[string]any{"exitCode": code}
	if reason != "" {
		data["exitReason"] = reason
	}
	msg, _ := json.Marshal(data)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { c.closeAfterOutput(wsCode, string(msg)) })
	}
	wg.Wait()
	if ptmx != nil {
		ptmx.Close()
	}
	b.mu.Lock()
	if b.ptys[p.id] == p {
		delete(b.ptys, p.id)
	}
	b.mu.Unlock()
}

// kill kills the shell and every process under it. The toolbox's kill
// route goes leaves first, depth-first with SIGKILL, then the shell; a
// sandbox that stops or is deleted (teardown) loses them all at once,
// which here means the shell first, so that it reports nothing about the
// rest.
func (p *ptySession) kill(b *sandbox, teardown bool) {
	p.mu.Lock()
	active, cmd := p.active, p.cmd
	p.mu.Unlock()
	if !active || cmd == nil || cmd.Process == nil {
		p.end(b, 137)
		return
	}
	if teardown {
		tree := descendants(cmd.Process.Pid)
		cmd.Process.Kill()
		for _, pid := range tree {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	} else {
		for _, pid := range descendants(cmd.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Process.Kill()
	}
	p.end(b, 137)
}

// descendants lists every process under pid, leaves first.
func descendants(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		out = append(out, descendants(c)...)
		out = append(out, c)
	}
	return out
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

func (p *ptySession) broadcast(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.clients {
		select {
		case c.send <- b:
			for q := int64(len(c.send)); ; {
				old := p.deepest.Load()
				if q <= old || p.deepest.CompareAndSwap(old, q) {
					break
				}
			}
		default: // the client's queue is full: drop it rather than stall the terminal
			delete(p.clients, c)
			go c.close(websocket.ClosePolicyViolation, "slow consumer")
		}
	}
}

// attach serves one websocket client until it goes away.
func (p *ptySession) attach(conn *websocket.Conn) {
	c := &ptyClient{conn: conn, send: make(chan []byte, ptySendQueue), bye: make(chan []byte, 1), closed: make(chan struct{})}
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		c.close(websocket.CloseNormalClosure, "")
		return
	}
	p.clients[c] = struct{}{}
	p.mu.Unlock()
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for {
			select {
			case <-c.closed:
				return
			case b := <-c.send:
				if err := c.write(websocket.BinaryMessage, b); err != nil {
					return
				}
			case frame := <-c.bye:
				for len(c.send) > 0 {
					if err := c.write(websocket.BinaryMessage, <-c.send); err != nil {
						break
					}
				}
				c.closeWith(frame)
				return
			}
		}
	}()
	msg, _ := json.Marshal(map[string]any{"type": "control", "status": "connected"})
	c.write(websocket.TextMessage, msg)
	conn.SetReadLimit(ptyReadLimit)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		select {
		case p.in <- data:
		case <-p.done:
		}
	}
	p.mu.Lock()
	delete(p.clients, c)
	p.mu.Unlock()
	c.close(websocket.CloseNormalClosure, "")
	<-writer
}

func (b *sandbox) pty(id string) *ptySession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ptys[id]
}

func (s *Server) ptyRoutes(h func(string, func(http.ResponseWriter, *http.Request, *sandbox))) {
	h("POST /toolbox/{id}/process/pty", s.createPTY)
	h("GET /toolbox/{id}/process/pty", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		b.mu.Lock()
		ps := make([]*ptySession, 0, len(b.ptys))
		for _, p := range b.ptys {
			ps = append(ps, p)
		}
		b.mu.Unlock()
		out := []map[string]any{}
		for _, p := range ps {
			out = append(out, p.info())
		}
		writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
	})
	h("GET /toolbox/{id}/process/pty/{sid}", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		p := b.pty(r.PathValue("sid"))
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "PTY session not found"})
			return
		}
		writeJSON(w, http.StatusOK, p.info())
	})
	h("DELETE /toolbox/{id}/process/pty/{sid}", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		p := b.pty(r.PathValue("sid"))
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "PTY session not found"})
			return
		}
		p.kill(b, false)
		writeJSON(w, http.StatusOK, map[string]any{"message": "PTY session deleted"})
	})
	h("GET /toolbox/{id}/process/pty/{sid}/connect", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		p, err := b.readyPTY(r.PathValue("sid"))
		if err != nil {
			msg, _ := json.Marshal(map[string]any{"type": "control", "status": "error", "error": "Failed to connect to PTY session: " + err.Error()})
			conn.WriteMessage(websocket.TextMessage, msg)
			conn.Close()
			return
		}
		p.attach(conn)
	})
	h("POST /toolbox/{id}/process/pty/{sid}/resize", func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		var req struct {
			Cols uint16 `json:"cols"`
			Rows uint16 `json:"rows"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Cols == 0 || req.Rows == 0 || req.Cols > 1000 || req.Rows > 1000 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "cols and rows must be 1..1000"})
			return
		}
		p := b.pty(r.PathValue("sid"))
		if p == nil {
			writeJSON(w, http.StatusGone, map[string]any{"error": "PTY session " + r.PathValue("sid") + " not found"})
			return
		}
		p.mu.Lock()
		if !p.active {
			p.mu.Unlock()
			writeJSON(w, http.StatusGone, map[string]any{"error": "PTY session has terminated and cannot be resized"})
			return
		}
		p.cols, p.rows = req.Cols, req.Rows
		err := pty.Setsize(p.ptmx, &pty.Winsize{Cols: req.Cols, Rows: req.Rows})
		p.mu.Unlock()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, p.info())
	})
}

// readyPTY returns a session a client may attach to, starting a lazy one.
func (b *sandbox) readyPTY(id string) (*ptySession, error) {
	p := b.pty(id)
	if p == nil {
		return nil, fmt.Errorf("PTY session %s not found", id)
	}
	p.mu.Lock()
	active, lazy, used := p.active, p.lazy, p.used
	p.mu.Unlock()
	switch {
	case active:
		return p, nil
	case lazy && !used:
		if err := b.startPTY(p); err != nil {
			return nil, fmt.Errorf("failed to start PTY session: %v", err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("PTY session '%s' has terminated and is no longer available", id)
}

func (s *Server) createPTY(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		ID        string            `json:"id"`
		Cwd       string            `json:"cwd"`
		Envs      map[string]string `json:"envs"`
		Cols      *uint16           `json:"cols"`
		Rows      *uint16           `json:"rows"`
		LazyStart bool              `json:"lazyStart"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	if req.ID == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "session ID is required"})
		return
	}
	p := &ptySession{id: req.ID, cwd: req.Cwd, envs: req.Envs, cols: 80, rows: 24, created: time.Now(),
		lazy: req.LazyStart, clients: map[*ptyClient]struct{}{}, in: make(chan []byte, 1024), done: make(chan struct{}),
		deepest: &s.deepestQueue}
	if p.cwd == "" {
		p.cwd = b.dir
	}
	if p.envs == nil {
		p.envs = map[string]string{}
	}
	if p.envs["TERM"] == "" {
		p.envs["TERM"] = "xterm-256color"
	}
	if req.Cols != nil {
		p.cols = *req.Cols
	}
	if req.Rows != nil {
		p.rows = *req.Rows
	}
	if p.cols > 1000 || p.rows > 1000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid value for cols or rows - must be less than 1000"})
		return
	}
	b.mu.Lock()
	if b.ptys[req.ID] != nil {
		b.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]any{"error": fmt.Sprintf("PTY session with ID '%s' already exists", req.ID)})
		return
	}
	b.ptys[req.ID] = p
	b.mu.Unlock()
	if !req.LazyStart {
		if err := b.startPTY(p); err != nil {
			b.mu.Lock()
			delete(b.ptys, req.ID)
			b.mu.Unlock()
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "failed to start PTY session"})
			return
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sessionId": req.ID})
}
