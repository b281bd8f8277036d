package vercel

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// startMessage is the first text frame of an interactive session: what
// to run in the sandbox's PTY. Later binary frames are its input; the
// server answers with binary frames of output and, at the end, a text
// frame {"type":"exit","code":N}.
type startMessage struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Cwd     string   `json:"cwd,omitempty"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
}

// rawScript puts the PTY in raw mode — no echo, no line editing, no
// signal or flow-control characters, no output translation — so the
// bytes of the agent protocol pass unchanged, prints the ready line
// ($1) so the caller knows raw mode holds before it sends anything, and
// runs the rest of its arguments with their standard error kept in a
// file ($2), away from the stream.
//
// Standard input is opened anew from the terminal's name: on a PTY, fds
// 0 and 1 otherwise share one open file, and a program that makes its
// input non-blocking (Go's runtime does, to poll it) makes its output
// non-blocking too — a write to a full terminal then fails with EAGAIN
// and the agent quits mid-reply.
const rawScript = `stty raw -echo -iexten -ixon -ixoff 2>/dev/null
printf '%s\n' "$1"
err=$2
shift 2
if t=$(tty 2>/dev/null); then exec "$@" <"$t" 2>>"$err"; fi
exec "$@" 2>>"$err"`

// stream is the byte stream of a process started in the sandbox's PTY
// over the interactive websocket.
type stream struct {
	conn    *websocket.Conn
	pending []byte // read from the socket, not yet returned
	stderr  func() string

	wmu       sync.Mutex // gorilla allows one writer at a time
	closeOnce sync.Once
}

// openStream starts argv through rawScript, in cwd (empty: the
// sandbox's), over the interactive session at wsURL and returns once its
// ready line has arrived.
func openStream(ctx context.Context, wsURL, token, cwd string, argv []string, errPath string, stderr func() string) (*stream, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, fmt.Errorf("vercel: interactive URL %q: %w", wsURL, err)
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	conn, err := dial(ctx, u.String())
	if err != nil {
		return nil, err
	}
	s := &stream{conn: conn, stderr: stderr}
	b := make([]byte, 12)
	rand.Read(b)
	ready := "runbox-ready-" + hex.EncodeToString(b)
	start := startMessage{
		Type: "start", Command: "/bin/sh",
		Args: append([]string{"-c", rawScript, "sh", ready, errPath}, argv...),
		Env:  []string{"TERM=dumb", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Cwd:  cwd, Cols: 80, Rows: 24,
	}
	msg, _ := json.Marshal(start)
	if err := s.writeFrame(websocket.TextMessage, msg); err != nil {
		conn.Close()
		return nil, fmt.Errorf("vercel: start the agent in the PTY: %w", err)
	}
	if err := s.awaitReady(ctx, ready); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// dial connects to the PTY server, trying a few times: it may not
// answer yet just after the session was opened (Vercel's own CLI polls
// its health first for that reason).
func dial(ctx context.Context, u string) (*websocket.Conn, error) {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
		if err == nil {
			return conn, nil
		}
		if resp != nil {
			err = fmt.Errorf("%w (status %d)", err, resp.StatusCode)
		}
		if attempt == 5 || ctx.Err() != nil || (resp != nil && resp.StatusCode < 500) {
			return nil, fmt.Errorf("vercel: connect to the sandbox's interactive session: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("vercel: connect to the sandbox's interactive session: %w", ctx.Err())
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// awaitReady reads until the ready line, keeping what follows it.
func (s *stream) awaitReady(ctx context.Context, ready string) error {
	stop := context.AfterFunc(ctx, func() { s.conn.Close() })
	defer stop()
	var seen []byte
	buf := make([]byte, 4096)
	for {
		n, err := s.Read(buf)
		seen = append(seen, buf[:n]...)
		if i := bytes.Index(seen, []byte(ready+"\n")); i >= 0 {
			s.pending = append(seen[i+len(ready)+1:], s.pending...)
			return nil
		}
		if len(seen) > 64<<10 {
			seen = seen[len(seen)-len(ready)-1:]
		}
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("vercel: the PTY never said it was ready (raw mode): %w", err)
		}
	}
}

func (s *stream) writeFrame(kind int, p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.conn.WriteMessage(kind, p)
}

// Read returns the process's output; io.EOF once the server says it
// exited or the socket closes normally.
func (s *stream) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		kind, data, err := s.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
				return 0, io.EOF
			}
			return 0, err
		}
		if kind == websocket.BinaryMessage {
			s.pending = data
			continue
		}
		var ctl struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &ctl) == nil && ctl.Type == "exit" {
			return 0, io.EOF
		}
		if ctl.Type == "" { // not a control frame: output sent as text
			s.pending = data
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Write sends p as the process's input.
func (s *stream) Write(p []byte) (int, error) {
	if err := s.writeFrame(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the session: the server hangs the PTY up, which ends the
// process.
func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.wmu.Lock()
		s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
		s.wmu.Unlock()
		err = s.conn.Close()
	})
	return err
}

// Stderr is the process's standard error so far, read from its file in
// the sandbox, for a failed handshake's message.
func (s *stream) Stderr() string {
	if s.stderr == nil {
		return ""
	}
	return s.stderr()
}
