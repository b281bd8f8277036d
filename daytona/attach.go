package daytona

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/runbox/runbox/agent/remote"
)

// The agent's byte stream is a toolbox PTY session. The toolbox starts a
// login shell on a terminal and joins the terminal to a websocket: its
// output arrives as binary messages, and whatever a message carries is
// written to the terminal as it is. A terminal translates (CR to LF,
// ^C to SIGINT, ^D to end of file, ^S stops output, echo, 8th bit), so
// Attach types one line into that shell which puts the terminal in raw
// mode, prints a ready marker and execs the agent in its place; bytes then
// pass untranslated both ways, and the marker tells where the shell's own
// noise (prompt, echo, motd) ends and the agent's stream begins.

// rawMode is what stty is given: every translation off, in both
// directions. "raw" alone leaves echo and, in some stty builds, iexten.
const rawMode = "raw -echo -iexten -icanon -isig -ixon -ixoff -istrip -icrnl -inlcr -igncr -opost cs8 -parenb min 1 time 0"

// readyTimeout bounds waiting for the ready marker after the line is
// typed: a shell that never prints it (another shell, no stty) costs
// this, then the native path takes over.
const readyTimeout = 30 * time.Second

// inputChunk is the largest message the stream sends: the toolbox closes
// a connection whose message exceeds 64 KiB.
const inputChunk = 32 << 10

// stderrKeep is how much of the agent's standard error a failed start
// reports.
const stderrKeep = 4 << 10

// Attach starts argv (the agent) in a new PTY session of sandbox id, with
// the terminal in raw mode, and returns its byte stream.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	sb, err := s.current(id)
	if err != nil {
		return nil, err
	}
	nonce := randomID()
	sid := "runbox-agent-" + nonce
	st := &ptyStream{s: s, sb: sb, sid: sid, errPath: path.Join(path.Dir(argv[0]), "agent-"+nonce+".err")}
	if _, err := sb.Process.CreatePtySession(ctx, sid, options.WithPtySize(types.PtySize{Rows: 24, Cols: 200})); err != nil {
		return nil, fmt.Errorf("daytona: create PTY session: %w", err)
	}
	h, err := sb.Process.ConnectPty(ctx, sid)
	if err != nil {
		st.killSession()
		return nil, fmt.Errorf("daytona: connect to PTY session %s: %w", sid, err)
	}
	st.h = h
	if err := h.WaitForConnection(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("daytona: connect to PTY session %s: %w", sid, err)
	}
	if err := h.SendInput([]byte(s.launchLine(argv, st.errPath, nonce))); err != nil {
		st.Close()
		return nil, fmt.Errorf("daytona: type into PTY session %s: %w", sid, err)
	}
	if err := st.awaitReady(ctx, nonce); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// launchLine is the line typed into the session's shell. Its standard
// error goes to errPath first, so neither the shell's complaints nor the
// agent's logs ever mix into the stream. The markers are printed with
// printf from separate words, so the echoed line never holds them.
//
// The agent's stdout is the terminal opened again (/dev/tty), not the
// descriptor its stdin shares: the agent makes its stdin non-blocking,
// and on one shared open file that would make its stdout non-blocking
// too, so a write to a full terminal would fail instead of waiting.
func (s *sandbox) launchLine(argv []string, errPath, nonce string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quote(a)
	}
	cd := ""
	if s.opts.Dir != "" {
		cd = "cd -- " + quote(s.opts.Dir) + " && "
	}
	// A leading space keeps the line out of the shell's history.
	return fmt.Sprintf(" exec 2>%s; %sstty %s && : >/dev/tty && unset TERM && printf 'runbox-%%s-%%s:' ready %s && exec %s >/dev/tty; printf 'runbox-%%s-%%s:' fail %s; exit 126\n",
		quote(errPath), cd, s.stty, nonce, strings.Join(words, " "), nonce)
}

// ptyStream is the agent's byte stream over a PTY session's websocket.
type ptyStream struct {
	s       *sandbox
	sb      *sdk.Sandbox
	h       *sdk.PtyHandle
	sid     string
	errPath string

	// rmu guards rest: the unread tail of the last message. The SDK's
	// own Read drops what does not fit the caller's buffer, so messages
	// are taken from its channel whole.
	rmu  sync.Mutex
	rest []byte
	// wmu serialises writes: the SDK writes to the websocket unguarded.
	wmu  sync.Mutex
	once sync.Once
}

// awaitReady reads the shell's output until the ready marker, keeping
// what follows it for Read; the fail marker, the end of the session or
// the timeout is an error that says what the shell reported.
func (st *ptyStream) awaitReady(ctx context.Context, nonce string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ready, fail := []byte("runbox-ready-"+nonce+":"), []byte("runbox-fail-"+nonce+":")
	var seen []byte
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("daytona: the PTY session's shell did not start the agent within %v (it printed %q)%s", readyTimeout, tail(seen, 200), st.stderrNote())
		case b, ok := <-st.h.DataChan():
			if !ok {
				return fmt.Errorf("daytona: the PTY session ended before the agent started (it printed %q)%s", tail(seen, 200), st.stderrNote())
			}
			seen = append(seen, b...)
			if i := bytes.Index(seen, ready); i >= 0 {
				st.rest = append([]byte(nil), seen[i+len(ready):]...)
				return nil
			}
			if bytes.Contains(seen, fail) {
				return fmt.Errorf("daytona: the PTY session could not be made raw for the agent%s", st.stderrNote())
			}
			if len(seen) > 1<<20 { // keep what may hold a marker cut by a message boundary
				seen = append([]byte(nil), seen[len(seen)-64<<10:]...)
			}
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (st *ptyStream) stderrNote() string {
	if msg := st.Stderr(); msg != "" {
		return ": " + msg
	}
	return ""
}

func (st *ptyStream) Read(p []byte) (int, error) {
	st.rmu.Lock()
	defer st.rmu.Unlock()
	if len(st.rest) == 0 {
		b, ok := <-st.h.DataChan()
		if !ok {
			return 0, io.EOF
		}
		st.rest = b
	}
	n := copy(p, st.rest)
	st.rest = st.rest[n:]
	return n, nil
}

func (st *ptyStream) Write(p []byte) (int, error) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), inputChunk)]
		if err := st.h.SendInput(c); err != nil {
			return n, fmt.Errorf("daytona: PTY session %s: %w", st.sid, err)
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

// Close ends the agent: a raw terminal has no end-of-file to send, so the
// session is killed (the toolbox kills the agent and everything under
// it), the websocket closed, and what the SDK still holds drained so its
// reader goroutine ends.
func (st *ptyStream) Close() error {
	st.once.Do(func() {
		st.killSession()
		if st.h != nil {
			st.h.Disconnect()
			for range st.h.DataChan() {
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st.sb.FileSystem.DeleteFile(ctx, st.errPath, false)
	})
	return nil
}

// killSession deletes the PTY session. The SDK's KillPtySession fails on
// the toolbox's success answer ({"message": …} does not decode into the
// generated type), so the status decides.
func (st *ptyStream) killSession() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, hr, err := st.sb.ToolboxClient.ProcessAPI.DeletePtySession(ctx, st.sid).Execute()
	if hr != nil && hr.Body != nil {
		hr.Body.Close()
	}
	if err != nil && (hr == nil || hr.StatusCode >= 300) {
		st.s.log.Debug("daytona: kill the agent's PTY session", "session", st.sid, "err", err)
	}
}

// Stderr is the end of what the agent (or the shell before it) wrote to
// its standard error, read back through the toolbox.
func (st *ptyStream) Stderr() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := st.sb.FileSystem.DownloadFileStream(ctx, st.errPath)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	return strings.TrimSpace(string(tail(b, stderrKeep)))
}

// current is the provisioned sandbox, when it is id.
func (s *sandbox) current(id string) (*sdk.Sandbox, error) {
	s.mu.Lock()
	sb := s.last
	s.mu.Unlock()
	if sb == nil || sb.ID != id {
		return nil, fmt.Errorf("daytona: sandbox %s is not the provisioned one: %w", id, remote.ErrGone)
	}
	return sb, nil
}
