package procregistry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Defaults of [Server] limits left zero.
const (
	DefaultMaxRequest  = 1 << 20
	DefaultMaxConns    = 256
	DefaultIdleTimeout = 60 * time.Second
)

// Server serves a [Registry] on a Unix socket to [Client]s of the same
// user: every connection's peer uid (SO_PEERCRED) must equal this
// process's, and the socket should live in a 0700 directory (see
// [Listen]). It is the transport only: every call maps to one Registry
// method.
//
// Its memory and descriptors are bounded whatever clients do: a request
// is one line of at most MaxRequest bytes, at most MaxConns connections
// are served at once, and a connection that sends nothing (or reads
// nothing) for IdleTimeout is closed. An error of Accept (no descriptor
// left: EMFILE) never stops it: it waits, less and less often, until
// one frees.
type Server struct {
	Reg *Registry
	// MaxRequest bounds one request line, in bytes. A longer one is
	// answered with an error matching [ErrRequestTooLarge] and the
	// connection is closed. Zero or negative means DefaultMaxRequest.
	MaxRequest int
	// MaxConns bounds the connections served at once. A connection
	// beyond it is answered at once with an error matching
	// [ErrOverloaded] and closed, unread ([Client] retries it for a
	// while); the others are served on. Zero or negative means
	// DefaultMaxConns.
	MaxConns int
	// IdleTimeout is how long a connection may take to send its request,
	// and how long a client may leave a frame of the answer unread,
	// before the connection is closed. A call that is waiting for a job
	// (a follow, a wait, events with wait) is not idle, however long it
	// waits. Zero or negative means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives accept errors and refused connections. Nil means
	// the registry's logger.
	Logger *slog.Logger
}

// Errors a [Server] answers with before it runs a call.
var (
	// ErrRequestTooLarge: the request line was longer than
	// [Server].MaxRequest.
	ErrRequestTooLarge = errors.New("procregistry: request too large")
	// ErrOverloaded: the server was serving [Server].MaxConns connections
	// and refused this one without reading it: nothing was done.
	ErrOverloaded = errors.New("procregistry: server has too many connections")
)

// serverLimits are a Server's limits with the defaults filled in.
type serverLimits struct {
	request int
	conns   int
	idle    time.Duration
}

func (s *Server) limits() serverLimits {
	l := serverLimits{request: s.MaxRequest, conns: s.MaxConns, idle: s.IdleTimeout}
	if l.request <= 0 {
		l.request = DefaultMaxRequest
	}
	if l.conns <= 0 {
		l.conns = DefaultMaxConns
	}
	if l.idle <= 0 {
		l.idle = DefaultIdleTimeout
	}
	return l
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	if s.Reg != nil && s.Reg.log != nil {
		return s.Reg.log
	}
	return slog.New(slog.DiscardHandler)
}

// Listen creates the socket at path. Its directory is checked like a
// state directory ([PrepareStateDir]: created if missing, refused when
// another user could change it or anything on the way to it) and
// tightened to 0700.
func Listen(path string) (net.Listener, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	dir, err := PrepareStateDir(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("procregistry: %w", err)
		}
	}
	path = filepath.Join(dir, filepath.Base(abs))
	// A socket left by a dead server: if nobody answers, replace it.
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("procregistry: %s: %w", path, ErrBusy)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	return ln, nil
}

// Serve answers connections on ln until ctx ends, then closes ln and
// every connection and returns once all handlers are done. It returns
// early only if ln is closed by someone else.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	lim := s.limits()
	log := s.logger()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, lim.conns)
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("procregistry: accept: %w", err)
			}
			// Out of descriptors (EMFILE, ENFILE) or another passing
			// failure: the connection stays queued until one frees.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			log.Warn("procregistry: accept failed; retrying", "err", err, "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		if err := CheckPeer(c); err != nil {
			log.Warn("procregistry: connection refused", "err", err)
			c.Close()
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			// Answered, not queued: a fresh connection's buffer is empty,
			// so this write does not wait on the client.
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			writeFrame(c, frame{Error: toWire(fmt.Errorf("%w (%d)", ErrOverloaded, lim.conns))})
			c.Close()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.handle(ctx, c, lim)
		})
	}
}

// errLineTooLong: a request line beyond the limit.
var errLineTooLong = errors.New("line too long")

// readLine reads one request line of at most max bytes, newline
// included; a last line without one, at EOF, counts.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max {
			return nil, errLineTooLong
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		}
		return nil, err
	}
}

func (s *Server) handle(ctx context.Context, c net.Conn, lim serverLimits) {
	defer c.Close()
	// The end of Serve wakes whatever the connection is blocked on.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fw := &frameWriter{c: c, idle: lim.idle}
	c.SetReadDeadline(time.Now().Add(lim.idle))
	br := bufio.NewReaderSize(c, 4<<10)
	line, err := readLine(br, lim.request)
	var req request
	switch {
	case errors.Is(err, errLineTooLong):
		fw.send(frame{Error: toWire(fmt.Errorf("%w: more than %d bytes", ErrRequestTooLarge, lim.request))})
		return
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
		fw.send(frame{Error: toWire(fmt.Errorf("procregistry: no request within %v", lim.idle))})
		return
	case err != nil:
		return // the client went away
	}
	if err := json.Unmarshal(line, &req); err != nil {
		fw.send(frame{Error: toWire(fmt.Errorf("procregistry: bad request: %w", err))})
		return
	}
	c.SetReadDeadline(time.Time{})
	// A client that goes away cancels its call (a follow, a wait).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		io.Copy(io.Discard, br)
		cancel()
	}()
	defer func() { c.Close(); <-gone }()
	res, err := s.call(ctx, &req, fw)
	f := frame{}
	if res != nil {
		b, merr := json.Marshal(res)
		if merr != nil && err == nil {
			err = merr
		}
		f.Result = b
	}
	if err != nil {
		f.Error = toWire(err)
	}
	fw.send(f)
}

// frameWriter writes the frames of one answer, each within the idle
// timeout: a client that stops reading is cut off instead of holding a
// connection (and a follow's goroutine) forever. As an io.Writer it
// sends follow output as data frames.
type frameWriter struct {
	c    net.Conn
	idle time.Duration
}

func (w *frameWriter) send(f frame) error {
	w.c.SetWriteDeadline(time.Now().Add(w.idle))
	return writeFrame(w.c, f)
}

func (w *frameWriter) Write(p []byte) (int, error) {
	if err := w.send(frame{Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeFrame writes f as one line, in one write.
func writeFrame(c net.Conn, f frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}

func (s *Server) call(ctx context.Context, q *request, fw *frameWriter) (any, error) {
	r := s.Reg
	switch q.Op {
	case "start":
		if q.Start == nil {
			return nil, errors.New("procregistry: start: no request")
		}
		return r.Start(ctx, *q.Start)
	case "list":
		return r.List(q.Owner), nil
	case "get":
		return r.Get(q.ID)
	case "poll":
		return r.Poll(q.ID)
	case "log":
		return r.ReadLog(q.ID, q.Offset, q.Limit)
	case "tail":
		return r.TailLines(q.ID, q.Lines)
	case "follow":
		next, err := r.Follow(ctx, q.ID, q.Offset, fw)
		return next, err
	case "wait":
		in, done, err := r.Wait(ctx, q.ID, q.Timeout)
		return waitResult{Info: in, Done: done}, err
	case "kill":
		return r.Kill(ctx, q.ID)
	case "write":
		return true, r.Write(ctx, q.ID, q.Data)
	case "submit":
		return true, r.Submit(ctx, q.ID, string(q.Data))
	case "close":
		return true, r.CloseStdin(ctx, q.ID)
	case "handoff":
		return r.Handoff(q.ID, q.Owner, q.Note)
	case "end_session":
		return r.EndSession(ctx, q.Owner)
	case "events":
		return r.Events(ctx, q.Consumer, q.Wait)
	case "ack":
		return true, r.Ack(q.Consumer, q.Seq)
	case "ping":
		return os.Getpid(), nil
	}
	return nil, fmt.Errorf("procregistry: unknown op %q", q.Op)
}

type waitResult struct {
	Info Info `json:"info"`
	Done bool `json:"done"`
}
