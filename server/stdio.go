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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over r (its requests, runbox's stdin) and
// w (the responses, runbox's stdout) until the client closes r or ctx
// ends. Nothing else may write to w. The client's session is torn down by
// [Server.Close], which waits for it; call it after ServeStdio returns.
//
// The SDK's stdio transport ends the whole connection on the first line
// it cannot take (broken JSON, a "jsonrpc" other than "2.0", a batch),
// and with it every shell, job and kernel of the session; and at the end
// of input it stops before the requests still running have replied.
// So the lines pass a filter first: a malformed one is answered with the
// JSON-RPC error the spec names (-32700 parse error, -32600 invalid
// request) and never reaches the SDK; and the SDK sees the end of input
// only once every request it was given has been answered (or ctx ends).
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &stdioFilter{out: w, pending: map[string]int{}, changed: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		pw.CloseWithError(f.pump(ctx, r, pw))
	}()
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopCloser{f}})
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
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return fmt.Errorf("server: stdio: %w", err)
}

// stdioFilter sits between the client's stdin and the SDK's transport,
// and between the SDK's writes and the client's stdout.
type stdioFilter struct {
	mu      sync.Mutex // serializes writes to out: one line per Write
	out     io.Writer
	pending map[string]int // ids of requests passed on and not yet answered
	changed chan struct{}  // signalled when pending shrinks
}

// maxLine bounds one message on stdin (a larger one is answered with a
// parse error and skipped, not buffered whole).
const maxLine = 64 << 20

// pump copies valid lines from r to sdk, answers invalid ones itself, and
// at the end of r waits until every request passed on was answered.
func (f *stdioFilter) pump(ctx context.Context, r io.Reader, sdk io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			if id, ok := f.check(line); ok {
				if id != "" {
					f.track(id, 1)
				}
				if _, werr := sdk.Write(append(line, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			f.drain(ctx)
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
			f.cancelled(trimmed)
		}
		return "", true // a notification: nothing answers it
	}
	return idKey(rid), true
}

// cancelled stops waiting for the request a cancellation names: a
// cancelled request may go unanswered.
func (f *stdioFilter) cancelled(line []byte) {
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
	n := f.pending[id]
	f.mu.Unlock()
	for range n {
		f.track(id, -1)
	}
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
// it answers.
func (f *stdioFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	n, err := f.out.Write(p)
	f.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(p, &m) == nil && m.Method == nil && validID(m.ID) != nil {
		f.track(idKey(m.ID), -1)
	}
	return n, err
}

// track counts a request passed on (+1) or answered (-1).
func (f *stdioFilter) track(id string, delta int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if delta < 0 && f.pending[id] == 0 {
		return // an answer to a request the filter did not pass on
	}
	f.pending[id] += delta
	if f.pending[id] <= 0 {
		delete(f.pending, id)
	}
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// drain waits until every request passed on has been answered, or ctx
// ends.
func (f *stdioFilter) drain(ctx context.Context) {
	for {
		f.mu.Lock()
		n := len(f.pending)
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-f.changed:
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
