package verceltest

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"
)

// openInteractive hands out a one-use token for the session's PTY
// websocket.
func (s *Server) openInteractive(w http.ResponseWriter, r *http.Request, ss *session) {
	tok := randomID("it_")
	s.mu.Lock()
	s.wsTokens[tok] = ss
	s.mu.Unlock()
	writeJSON(w, map[string]string{"url": "ws://" + r.Host + "/interactive/" + ss.id, "token": tok})
}

// ptyStart is the client's first message.
type ptyStart struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Cwd     string   `json:"cwd"`
	Cols    uint16   `json:"cols"`
	Rows    uint16   `json:"rows"`
}

// interactive is the PTY websocket: a text "start" message runs a
// command on a new terminal; binary messages are its input, and its
// output comes back as binary messages, then a text {"type":"exit"}.
// Text "resize" messages resize the terminal. Closing the socket hangs
// the terminal up and kills the command's process group.
func (s *Server) interactive(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	s.mu.Lock()
	ss := s.wsTokens[tok]
	delete(s.wsTokens, tok)
	if ss != nil && !s.closed {
		s.wg.Add(1) // Stop waits for the terminal's goroutines
		defer s.wg.Done()
	}
	s.mu.Unlock()
	if ss == nil || ss.id != r.PathValue("id") {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	var start ptyStart
	if err := conn.ReadJSON(&start); err != nil || start.Type != "start" || start.Command == "" {
		conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "start message expected"))
		return
	}
	s.runPTY(conn, ss, start)
}

func (s *Server) runPTY(conn *websocket.Conn, ss *session, start ptyStart) {
	extra := map[string]string{}
	for _, kv := range start.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			extra[k] = v
		}
	}
	cmd := exec.Command(start.Command, start.Args...)
	cmd.Dir, cmd.Env = ss.dir, ss.env(extra)
	if start.Cwd != "" {
		cmd.Dir = filepath.Clean(start.Cwd)
	}
	size := &pty.Winsize{Cols: max(start.Cols, 1), Rows: max(start.Rows, 1)}
	tty, err := pty.StartWithSize(cmd, size) // a session of its own: its pid is its group
	if err != nil {
		conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","message":"cannot start"}`))
		return
	}
	defer tty.Close()
	pg := cmd.Process.Pid
	if !ss.addGroup(pg) {
		killTree(pg)
	}
	defer ss.removeGroup(pg)
	var wmu sync.Mutex
	var exited atomic.Bool // after Wait the pid may be another's: never signal it
	outDone := make(chan struct{})
	go func() { // owned by runPTY, which waits for it
		defer close(outDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				wmu.Lock()
				werr := conn.WriteMessage(websocket.BinaryMessage, buf[:n])
				wmu.Unlock()
				if werr != nil {
					return
				}
			}
			if err != nil { // EIO once the terminal's last holder has gone
				return
			}
		}
	}()
	inDone := make(chan struct{})
	go func() { // owned by runPTY: ends when the socket closes
		defer close(inDone)
		for {
			kind, data, err := conn.ReadMessage()
			if err != nil { // the client hung up: so does the terminal
				if !exited.Load() {
					killTree(pg)
				}
				return
			}
			if kind == websocket.BinaryMessage {
				if _, err := tty.Write(data); err != nil {
					return
				}
				continue
			}
			var ctl ptyStart
			if json.Unmarshal(data, &ctl) == nil && ctl.Type == "resize" {
				pty.Setsize(tty, &pty.Winsize{Cols: max(ctl.Cols, 1), Rows: max(ctl.Rows, 1)})
			}
		}
	}()
	cmd.Wait()
	exited.Store(true)
	code := exitCode(cmd)
	// Output written before the exit is still in the terminal: drain it,
	// bounded, since a leftover child may hold the terminal open.
	select {
	case <-outDone:
	case <-time.After(2 * time.Second):
		tty.Close()
		<-outDone
	}
	wmu.Lock()
	msg, _ := json.Marshal(map[string]any{"type": "exit", "code": code})
	conn.WriteMessage(websocket.TextMessage, msg)
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	wmu.Unlock()
	conn.Close()
	<-inDone
}
