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
	"slices"
	"sync"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
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
// [Listen]). Every call maps to one Registry method, made for the owner
// the server finds the connection acts for (see "Owners" in the package
// documentation): another owner's jobs are not found.
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
	// beyond it makes room by closing the oldest idle connection (no
	// request read yet: answered with an error matching [ErrOverloaded],
	// which [Client] retries for a while), else the oldest waiting one (a
	// follow, a wait, events with wait: its client sees [ErrConnLost]).
	// Only when every connection runs a call that ends by itself is the
	// new one answered [ErrOverloaded] and closed, unread. Zero or
	// negative means DefaultMaxConns.
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
	// StrictPolicy gives the sandbox of a job that a confined caller
	// starts when the caller's own sandbox is not known (see "Confined
	// callers" in the package documentation): the strictest there is, for
	// a job started in dir, and the argv prefix of its trampoline. Nil,
	// or an error, refuses such a start.
	StrictPolicy func(dir string) (*confine.Policy, []string, error)
}

// Errors a [Server] answers with before it runs a call.
var (
	// ErrRequestTooLarge: the request line was longer than
	// [Server].MaxRequest.
	ErrRequestTooLarge = errors.New("procregistry: request too large")
	// ErrOverloaded: the server was serving [Server].MaxConns connections
	// and refused this one, or closed it to make room for a newer one,
	// without running its request: nothing was done.
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
// state directory (the rules of package statedir: created if missing, refused when
// another user could change it or anything on the way to it) and
// tightened to 0700.
func Listen(path string) (net.Listener, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	dir, err := prepareStateDir(filepath.Dir(abs))
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
	conns := newConnSet(lim.conns)
	fronts := &frontEnds{}
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
		sc := conns.add(c)
		if sc == nil {
			// Answered, not queued: a fresh connection's buffer is empty,
			// so this write does not wait on the client.
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			writeFrame(c, frame{Error: toWire(fmt.Errorf("%w (%d)", ErrOverloaded, lim.conns))})
			c.Close()
			continue
		}
		wg.Go(func() {
			defer conns.remove(sc)
			s.handle(ctx, sc, conns, fronts, lim)
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

func (s *Server) handle(ctx context.Context, sc *servedConn, conns *connSet, fronts *frontEnds, lim serverLimits) {
	c := sc.c
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
	st := connBusy
	if waits(&req) {
		st = connWaiting
	}
	if !conns.begin(sc, st) {
		return // closed to make room before the call ran
	}
	var who caller
	if req.Op != "ping" { // anyone may ask whether the server answers
		if who, err = s.identify(ctx, c, &req, fronts); err != nil {
			fw.send(frame{Error: toWire(err)})
			return
		}
	}
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
	res, err := s.call(ctx, who, &req, fw)
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

// waits reports whether q is a call that waits for a job or an event
// rather than ending by itself.
func waits(q *request) bool {
	return q.Op == "follow" || q.Op == "wait" || (q.Op == "events" && q.Wait)
}

// call runs q for who: every job named is resolved among the jobs who
// may see (another owner's is not found), and every owner named must be
// one who acts for.
func (s *Server) call(ctx context.Context, who caller, q *request, fw *frameWriter) (any, error) {
	r := s.Reg
	if q.Op == "ping" {
		return os.Getpid(), nil
	}
	if who.owner == "" && !who.unclaimed {
		return nil, who.deny(q.Op)
	}
	switch q.Op {
	case "start":
		if q.Start == nil {
			return nil, errors.New("procregistry: start: no request")
		}
		req := *q.Start
		if who.owner != "" {
			req.Owner = who.owner // a job's process or a token: its owner
		}
		if !who.may(r, req.Owner) {
			return nil, who.deny("start a job for owner " + req.Owner)
		}
		mark, err := s.confineFor(who, &req)
		if err != nil {
			return nil, err
		}
		return r.start(ctx, req, mark)
	case "list":
		if q.Owner != "" && !who.may(r, q.Owner) {
			return nil, who.deny("list the jobs of owner " + q.Owner)
		}
		return r.visible(who, q.Owner), nil
	case "end_session", "events", "ack":
		if who.confined && who.policy == nil {
			// Events carry other jobs' output; a session's end kills
			// jobs this caller may not see.
			return nil, who.deny(q.Op + " (a confined caller whose sandbox is not known acts on its own jobs only)")
		}
	}
	switch q.Op {
	case "end_session":
		if !who.may(r, q.Owner) {
			return nil, who.deny("end the session of owner " + q.Owner)
		}
		return r.EndSession(ctx, q.Owner)
	case "events", "ack":
		if !who.may(r, q.Consumer) {
			return nil, who.deny("read the events of " + q.Consumer)
		}
		if q.Op == "ack" {
			return true, r.Ack(q.Consumer, q.Seq)
		}
		return r.Events(ctx, q.Consumer, q.Wait)
	}
	if !isJobOp(q.Op) {
		return nil, fmt.Errorf("procregistry: unknown op %q", q.Op)
	}
	id, err := r.resolveFor(who, q.ID)
	if err != nil {
		return nil, err
	}
	return s.jobCall(ctx, who, id, q, fw)
}

// confineFor decides the sandbox of a job who starts: a confined caller's
// job runs in the caller's own sandbox when it is known, else under the
// strictest one; whatever the request says of a sandbox is then dropped.
// An unconfined caller's request stands as it is (the user's own choice,
// --sandbox off included). It returns record.ConfinedCaller.
func (s *Server) confineFor(who caller, req *StartRequest) (string, error) {
	if !who.confined {
		return "", nil
	}
	// A key names one owner's job; a confined caller's keys are apart, so
	// that a key cannot fetch a job it may not see.
	if req.Key != "" {
		req.Key = "confined:" + req.Key
	}
	if who.policy != nil {
		p := *who.policy
		req.Confine, req.Confiner = &p, slices.Clone(who.confiner)
		return callerOwnSandbox, nil
	}
	if s.StrictPolicy == nil {
		return "", who.deny("start a job (a confined caller's job needs a sandbox, and this server has none to give)")
	}
	p, conf, err := s.StrictPolicy(req.Dir)
	if err == nil && (p == nil || p.Profile == confine.ProfileOff || len(conf) == 0) {
		err = errors.New("no sandbox")
	}
	if err != nil {
		return "", fmt.Errorf("procregistry: start: %s: the job cannot be confined: %v: %w", who.why, err, envs.ErrDenied)
	}
	req.Confine, req.Confiner = p, slices.Clone(conf)
	return callerUnknownSandbox, nil
}

// isJobOp reports whether op is a call on one job, named by q.ID.
func isJobOp(op string) bool {
	switch op {
	case "get", "poll", "log", "tail", "follow", "wait", "kill", "write", "submit", "close", "handoff", "set_lifetime":
		return true
	}
	return false
}

// jobCall runs a call on job id, which who may see.
func (s *Server) jobCall(ctx context.Context, who caller, id string, q *request, fw *frameWriter) (any, error) {
	r := s.Reg
	switch q.Op {
	case "get":
		return r.Get(id)
	case "poll":
		return r.Poll(id)
	case "log":
		return r.ReadLog(id, q.Offset, q.Limit)
	case "tail":
		return r.TailLines(id, q.Lines)
	case "follow":
		return r.Follow(ctx, id, q.Offset, fw)
	case "wait":
		in, done, err := r.Wait(ctx, id, q.Timeout)
		return waitResult{Info: in, Done: done}, err
	case "kill":
		return r.Kill(ctx, id)
	case "write":
		return true, r.Write(ctx, id, q.Data)
	case "submit":
		return true, r.Submit(ctx, id, string(q.Data))
	case "close":
		return true, r.CloseStdin(ctx, id)
	case "set_lifetime":
		return r.SetLifetime(id, q.Lifetime)
	}
	// handoff: giving a job away is allowed, but not into an owner a
	// token holds for someone else (it would land in their queue).
	if r.claimed(q.Owner) && q.Owner != who.owner {
		return nil, who.deny("hand a job to owner " + q.Owner + ", which a token holds")
	}
	return r.Handoff(id, q.Owner, q.Note)
}

type waitResult struct {
	Info Info `json:"info"`
	Done bool `json:"done"`
}
