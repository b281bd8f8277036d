package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// EOFGrace is how long, once a stdio client's input has ended, the
// requests still running are given to answer before they are cancelled
// and the session is torn down. A client whose end of the output is gone
// too (it crashed) is not waited for at all.
const EOFGrace = 5 * time.Second

// ServeStdio serves one client over r (its requests, runbox's stdin) and
// w (the responses, runbox's stdout) until the client closes r or ctx
// ends. Nothing else may write to w. The client's session is torn down
// before ServeStdio returns; [Server.Close] waits for the rest.
//
// The SDK's stdio transport ends the whole connection on the first line
// it cannot take (broken JSON, a "jsonrpc" other than "2.0", a batch, a
// line over its own length limit), and with it every shell, job and
// kernel of the session: newIOConnLimited's reader (transport.go) stops at
// the first json.Decoder or frame-limit error, ioConn.Read returns it (and
// readBatch's, from jsonrpc2.DecodeMessage or a batch in protocol
// 2025-06-18 and later), and jsonrpc2 Connection.readIncoming ends the
// connection on any read error, answering nothing. So the lines pass a
// filter first: a malformed or oversized one is answered with the JSON-RPC
// error the spec names (-32700 parse error, -32600 invalid request) and
// never reaches the SDK. (The filter refuses batches in every version;
// ioConn.Read still takes them for 2025-03-26 and before.)
//
// The end of input ends the session: the requests still running get
// [EOFGrace] to answer (none if the client can no longer read w: it is
// gone), then they are cancelled, and the session's environment and its
// background jobs of session lifetime are torn down. A request the client
// cancelled (notifications/cancelled) is not answered. If w is a pipe or
// a socket (it has a SyscallConn), ServeStdio notices a client that
// closed its end; a write that fails because the client is gone ends the
// session the same way, and is no error. (The caller must keep SIGPIPE
// from killing the process: see os/signal.)
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &stdioFilter{out: w, gone: peerGone(w), pending: map[string]int{}, cancelled: map[string]bool{}, changed: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		pw.CloseWithError(f.pump(ctx, r, pw))
	}()
	// The filter bounds a line (maxLine): the SDK's own bound, smaller
	// (DefaultMaxLineLength, 16 MiB, in transport.go), would end the
	// connection on a line the filter let through.
	ss, err := s.mcp.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: nopCloser{f}, MaxLineLength: -1}, nil)
	if err != nil {
		pr.Close()
		r.Close()
		return fmt.Errorf("server: stdio: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- ss.Wait() }()
	select {
	case err = <-waited:
	case <-pumped:
		// The input ended (and the grace passed): the SDK has seen the end
		// and cancels what still runs; the teardown kills what a cancelled
		// call may still wait for, so the connection can end.
		s.endSession(ss)
		err = <-waited
	case <-ctx.Done():
		// The SDK does not pass ctx's end on to the calls: jsonrpc2
		// NewConnection (internal/jsonrpc2/conn.go) hides the connection's
		// context from handlers (notDone). So the session is torn down
		// and closed here.
		s.endSession(ss)
		ss.Close()
		err = <-waited
	}
	s.endSession(ss)
	cancel()
	pr.Close() // a pump writing a line gets an error
	r.Close()  // a pump reading from a closable stream returns
	// A read of a terminal or a blocking pipe cannot be interrupted: the
	// pump then ends at the next line or the end of input, and the
	// process is exiting anyway; do not hang the exit on it.
	select {
	case <-pumped:
	case <-time.After(time.Second):
	}
	if err == nil || f.isGone() || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return fmt.Errorf("server: stdio: %w", err)
}

// peerGone returns a check of whether the reader of w has gone away (a
// pipe whose read end is closed, a socket whose peer closed), or nil when
// w cannot tell.
func peerGone(w io.Writer) func() bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() bool {
		gone := false
		rc.Control(func(fd uintptr) {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if n, err := unix.Poll(p, 0); err == nil && n > 0 {
				gone = p[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
			}
		})
		return gone
	}
}

// stdioFilter sits between the client's stdin and the SDK's transport,
// and between the SDK's writes and the client's stdout.
type stdioFilter struct {
	out  io.Writer
	gone func() bool // reports the client's end of out closed; nil: unknown

	mu        sync.Mutex      // serializes writes to out (one line per Write) and guards the fields below
	pending   map[string]int  // ids of requests passed on and not yet answered
	cancelled map[string]bool // ids of requests the client cancelled before their answer: never answered
	broken    bool            // a write to out failed: the client is gone
	changed   chan struct{}   // signalled when pending shrinks or out breaks
}

// maxLine bounds one message on stdin (a larger one is answered with a
// parse error and skipped, not buffered whole).
const maxLine = 64 << 20

// pump copies valid lines from r to sdk, answers invalid ones itself, and
// at the end of r gives the requests passed on [EOFGrace] to be answered.
// The end of r is passed on only after that grace: when its reader ends,
// jsonrpc2 Connection.readIncoming (internal/jsonrpc2/conn.go) cancels
// every request in flight at once, so a client that closes its stdin
// right after its last request would have that request cancelled.
func (f *stdioFilter) pump(ctx context.Context, r io.Reader, sdk io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			if id, ok := f.check(line); ok {
				if id != "" {
					f.track(id)
				}
				if _, werr := sdk.Write(append(line, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			f.settle(ctx, EOFGrace)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads one line without its newline; a line over maxLine is
// read to its end and returned cut (it then fails to parse).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// wireMessage is what the filter reads of a message.
type wireMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
}

// check decides a line: ok means it goes to the SDK (id is the key of a
// request that awaits an answer, "" for anything else); otherwise the
// line was answered here with an error.
func (f *stdioFilter) check(line []byte) (id string, ok bool) {
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		f.reply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return "", false
	}
	if trimmed[0] == '[' {
		f.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported; send one message per line")
		return "", false
	}
	var m wireMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &m) != nil {
		f.reply(nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object")
		return "", false
	}
	rid := validID(m.ID)
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		f.reply(rid, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return "", false
	}
	if m.ID != nil && rid == nil {
		f.reply(nil, jsonrpc.CodeInvalidRequest, `invalid request: "id" must be a string or a number`)
		return "", false
	}
	if m.Method == nil {
		return "", true // a response to one of the server's requests
	}
	var method string
	if json.Unmarshal(m.Method, &method) != nil || method == "" {
		f.reply(rid, jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
		return "", false
	}
	if rid == nil {
		if method == "notifications/cancelled" {
			f.cancel(trimmed)
		}
		return "", true // a notification: nothing answers it
	}
	return idKey(rid), true
}

// cancel notes the client's cancellation of a request still running: it
// is not waited for any more, and its answer, when the SDK writes one,
// is dropped (the protocol says a cancelled request is not answered; the
// SDK's canceller.Preempt in transport.go only cancels the handler's
// context, and jsonrpc2 Connection.processResult writes its answer all
// the same). A
// cancellation of a request already answered changes nothing.
func (f *stdioFilter) cancel(line []byte) {
	var m struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || validID(m.Params.RequestID) == nil {
		return
	}
	id := idKey(m.Params.RequestID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[id] == 0 {
		return
	}
	f.cancelled[id] = true
	delete(f.pending, id)
	f.signal()
}

// validID is a message's id when it is a string or a number, else nil.
func validID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return nil
	}
	return raw
}

// idKey is the comparable form of an id, as the SDK writes it back.
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// reply writes a JSON-RPC error response for a message the SDK never saw.
func (f *stdioFilter) reply(id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": "runbox: " + msg},
	})
	f.Write(append(b, '\n'))
}

// Write passes one of the SDK's lines to the client, noting the request
// it answers; the answer to a cancelled request is dropped. Once a write
// failed (the client is gone), the rest are dropped too.
func (f *stdioFilter) Write(p []byte) (int, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	id := ""
	if json.Unmarshal(p, &m) == nil && m.Method == nil && validID(m.ID) != nil {
		id = idKey(m.ID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != "" && f.cancelled[id] {
		delete(f.cancelled, id)
		return len(p), nil
	}
	if f.broken {
		return 0, syscall.EPIPE
	}
	n, err := f.out.Write(p)
	if err != nil {
		f.broken = true
		f.signal()
	}
	if id != "" && f.pending[id] > 0 {
		if f.pending[id]--; f.pending[id] == 0 {
			delete(f.pending, id)
		}
		f.signal()
	}
	return n, err
}

// track counts a request passed on.
func (f *stdioFilter) track(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[id]++
}

// signal wakes settle; f.mu is held.
func (f *stdioFilter) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// isGone reports whether the client can no longer read what is written.
func (f *stdioFilter) isGone() bool {
	f.mu.Lock()
	broken := f.broken
	f.mu.Unlock()
	return broken || (f.gone != nil && f.gone())
}

// settle waits, at the end of input, until every request passed on has
// been answered (or cancelled by the client), for grace at most; not at
// all once the client is gone; and never beyond ctx.
func (f *stdioFilter) settle(ctx context.Context, grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		f.mu.Lock()
		n := len(f.pending)
		f.mu.Unlock()
		if n == 0 || f.isGone() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-f.changed:
		case <-tick.C:
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
