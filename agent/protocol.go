package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/runbox/runbox/envs"
)

// Version is the protocol version this package speaks. A client and an
// agent of different versions refuse each other in the handshake
// (see [VersionError]). Version 2 added messages that span frames
// (frameMore).
const Version = 2

// MaxPayload bounds one frame's payload. A frame that declares more is a
// protocol error: the decoder never allocates beyond it.
const MaxPayload = 1 << 20

// MaxMessage bounds one JSON message (a call, a reply, an exit). A message
// longer than [MaxPayload] — a reply whose Result carries megabytes of
// captured output — travels as several frames (see message.go). A sender
// refuses to encode more; a receiver drops a peer whose unfinished
// messages, on all channels together, add up to more, so a hostile peer
// cannot make it hold more than this.
const MaxMessage = 64 << 20

// headerSize is the frame header: type (1), channel id (4), length (4).
const headerSize = 9

// window is the flow-control window of one stream: a sender may have at
// most this many unacknowledged bytes in flight, so a reader that stops
// reading holds at most this much memory on the receiving side and blocks
// only its own stream.
const window = 256 << 10

// chunk is the largest data payload a sender puts in one frame.
const chunk = 32 << 10

// frameType is the kind of a frame.
type frameType uint8

const (
	frameHello  frameType = iota + 1 // JSON hello; channel 0
	frameCall                        // JSON call; channel = the call's subject
	frameReply                       // JSON reply to a call, matched by seq
	frameData                        // stream(1) offset(8) bytes
	frameWindow                      // stream(1) increment(4)
	frameEOF                         // stream(1) [error text]
	frameExit                        // JSON exit of a streaming process
	frameMore                        // a leading piece of a JSON message; the rest follows on the same channel
	frameMax
)

func (t frameType) String() string {
	switch t {
	case frameHello:
		return "hello"
	case frameCall:
		return "call"
	case frameReply:
		return "reply"
	case frameData:
		return "data"
	case frameWindow:
		return "window"
	case frameEOF:
		return "eof"
	case frameExit:
		return "exit"
	case frameMore:
		return "more"
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// Streams of a channel. Stream 0 flows from client to agent (stdin, file
// contents being put); 1 and 2 flow from agent to client (stdout or the
// interleaved output, stderr, file contents being read).
const (
	streamIn     = 0
	streamOut    = 1
	streamErr    = 2
	streamsTotal = 3
)

type frame struct {
	typ     frameType
	id      uint32
	payload []byte
}

// ProtocolError is a malformed frame or a peer breaking the protocol
// (a frame too large, an unknown type, data beyond the granted window).
// The connection is dropped when one is met.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "agent: protocol error: " + e.Msg }

// VersionError is returned by [NewClient] when the agent speaks another
// protocol version. Client and agent must come from the same runbox release.
type VersionError struct {
	Client, Agent int
	// AgentBuild is the agent's self-description (release, OS/arch), if sent.
	AgentBuild string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("agent: incompatible agent: it speaks protocol version %d (%s), this client speaks %d; deploy the agent from the same runbox release",
		e.Agent, e.AgentBuild, e.Client)
}

// Is makes errors.Is(err, envs.ErrUnsupported) true.
func (e *VersionError) Is(target error) bool { return target == envs.ErrUnsupported }

// encodeFrame appends f's wire form to dst.
func encodeFrame(dst []byte, f frame) []byte {
	var h [headerSize]byte
	h[0] = byte(f.typ)
	binary.BigEndian.PutUint32(h[1:5], f.id)
	binary.BigEndian.PutUint32(h[5:9], uint32(len(f.payload)))
	return append(append(dst, h[:]...), f.payload...)
}

// readFrame reads one frame. The payload is allocated only after its
// declared length has been checked against MaxPayload.
func readFrame(r io.Reader) (frame, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{typ: frameType(h[0]), id: binary.BigEndian.Uint32(h[1:5])}
	n := binary.BigEndian.Uint32(h[5:9])
	if f.typ == 0 || f.typ >= frameMax {
		return frame{}, &ProtocolError{Msg: fmt.Sprintf("unknown frame type %d", h[0])}
	}
	if n > MaxPayload {
		return frame{}, &ProtocolError{Msg: fmt.Sprintf("%v frame of %d bytes exceeds the %d-byte limit", f.typ, n, MaxPayload)}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	if err := f.check(); err != nil {
		return frame{}, err
	}
	return f, nil
}

// check validates the fixed part of typed payloads.
func (f frame) check() error {
	switch f.typ {
	case frameData:
		if len(f.payload) < 9 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad data frame"}
		}
	case frameWindow:
		if len(f.payload) != 5 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad window frame"}
		}
	case frameEOF:
		if len(f.payload) < 1 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad eof frame"}
		}
	}
	return nil
}

func dataFrame(id uint32, stream byte, off uint64, b []byte) frame {
	p := make([]byte, 9+len(b))
	p[0] = stream
	binary.BigEndian.PutUint64(p[1:9], off)
	copy(p[9:], b)
	return frame{typ: frameData, id: id, payload: p}
}

func parseData(f frame) (stream byte, off uint64, b []byte) {
	return f.payload[0], binary.BigEndian.Uint64(f.payload[1:9]), f.payload[9:]
}

func windowFrame(id uint32, stream byte, n uint32) frame {
	p := make([]byte, 5)
	p[0] = stream
	binary.BigEndian.PutUint32(p[1:], n)
	return frame{typ: frameWindow, id: id, payload: p}
}

func eofFrame(id uint32, stream byte, err error) frame {
	p := []byte{stream}
	if err != nil {
		p = append(p, err.Error()...)
	}
	return frame{typ: frameEOF, id: id, payload: p}
}

// hello is the first frame each side sends.
type hello struct {
	Version int    `json:"version"`
	Role    string `json:"role"` // "client" or "agent"
	Build   string `json:"build,omitempty"`
	// Caps are the agent's capabilities (agent only).
	Caps map[envs.Capability]wireCap `json:"caps,omitempty"`
	// Cwd is the agent session's initial directory (agent only).
	Cwd string `json:"cwd,omitempty"`
}

type wireCap struct {
	State  int    `json:"state"`
	Detail string `json:"detail,omitempty"`
}

func capsToWire(c envs.Capabilities) map[envs.Capability]wireCap {
	m := make(map[envs.Capability]wireCap, len(c))
	for k, v := range c {
		m[k] = wireCap{State: int(v.State), Detail: v.Detail}
	}
	return m
}

func capsFromWire(m map[envs.Capability]wireCap) envs.Capabilities {
	c := make(envs.Capabilities, len(m))
	for k, v := range m {
		c[k] = envs.CapInfo{State: envs.CapState(v.State), Detail: v.Detail}
	}
	return c
}

// op names a call. A closed set: the agent refuses any other.
type op string

const (
	opRun      op = "run"      // run a command to completion; reply carries the Result
	opStart    op = "start"    // start a streaming process; reply carries the PID
	opCancel   op = "cancel"   // interrupt a running opRun (exit 130)
	opSignal   op = "signal"   // signal a streaming process
	opKill     op = "kill"     // whole-tree kill of a streaming process
	opResize   op = "resize"   // resize a streaming process's PTY
	opRelease  op = "release"  // the client is done with a channel
	opPut      op = "put"      // write stream 0 to a file
	opGet      op = "get"      // read a file into stream 1
	opPing     op = "ping"     // liveness
	opShutdown op = "shutdown" // kill everything still running; the stream ends next
)

// call is a request. Channel-scoped calls name their channel in the frame id.
type call struct {
	Seq uint64       `json:"seq"`
	Op  op           `json:"op"`
	Cmd *wireCommand `json:"cmd,omitempty"`
	// Stdin says stream 0 carries the command's standard input.
	Stdin  bool             `json:"stdin,omitempty"`
	Signal int              `json:"signal,omitempty"`
	Size   *envs.WindowSize `json:"size,omitempty"`
	Path   string           `json:"path,omitempty"`
	Perm   uint32           `json:"perm,omitempty"`
}

type reply struct {
	Seq    uint64      `json:"seq"`
	Err    *wireError  `json:"err,omitempty"`
	PID    int         `json:"pid,omitempty"`
	Result *wireResult `json:"result,omitempty"`
}

// JSON strings must be valid UTF-8 (encoding/json replaces anything else),
// but commands and their output are bytes. Every byte-string field goes
// over the wire as []byte (base64), the rest as the envs types' own JSON.

type wireCommand struct {
	envs.Command
	Shell []byte            `json:"shell_b,omitempty"`
	Args  [][]byte          `json:"args_b,omitempty"`
	Dir   []byte            `json:"dir_b,omitempty"`
	Env   map[string][]byte `json:"env_b,omitempty"`
}

func commandToWire(c envs.Command) *wireCommand {
	w := &wireCommand{Command: c, Shell: []byte(c.Shell), Dir: []byte(c.Dir)}
	for _, a := range c.Args {
		w.Args = append(w.Args, []byte(a))
	}
	if c.Env != nil {
		w.Env = make(map[string][]byte, len(c.Env))
		for k, v := range c.Env {
			w.Env[k] = []byte(v)
		}
	}
	w.Command.Shell, w.Command.Args, w.Command.Dir, w.Command.Env, w.Command.Stdin = "", nil, "", nil, nil
	return w
}

func (w *wireCommand) command() envs.Command {
	c := w.Command
	c.Shell, c.Dir = string(w.Shell), string(w.Dir)
	for _, a := range w.Args {
		c.Args = append(c.Args, string(a))
	}
	if w.Env != nil {
		c.Env = make(map[string]string, len(w.Env))
		for k, v := range w.Env {
			c.Env[k] = string(v)
		}
	}
	return c
}

type wireResult struct {
	envs.Result
	Output []byte `json:"output_b"`
	Stderr []byte `json:"stderr_b,omitempty"`
}

func resultToWire(r *envs.Result) *wireResult {
	if r == nil {
		return nil
	}
	w := &wireResult{Result: *r, Output: []byte(r.Output), Stderr: []byte(r.Stderr)}
	w.Result.Output, w.Result.Stderr = "", ""
	return w
}

func (w *wireResult) result() *envs.Result {
	r := w.Result
	r.Output, r.Stderr = string(w.Output), string(w.Stderr)
	return &r
}

// exitMsg ends a streaming process.
type exitMsg struct {
	Status envs.ExitStatus `json:"status"`
	Err    *wireError      `json:"err,omitempty"`
}

// wireError carries an error across the stream, keeping the envs sentinel
// (or type) it matched so errors.Is and errors.As work on the far side.
type wireError struct {
	Kind string `json:"kind,omitempty"`
	Msg  string `json:"msg"`
	PIDs []int  `json:"pids,omitempty"`
}

var kinds = []struct {
	name string
	err  error
}{
	{"not_found", envs.ErrNotFound},
	{"closed", envs.ErrClosed},
	{"unsupported", envs.ErrUnsupported},
	{"denied", envs.ErrDenied},
	{"bad_command", envs.ErrBadCommand},
	{"timeout", envs.ErrTimeout},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var se *envs.SurvivorsError
	if errors.As(err, &se) {
		w.Kind, w.PIDs = "survivors", se.PIDs
		return w
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			w.Kind = k.name
			break
		}
	}
	return w
}

// RemoteError is an error that happened inside the agent. It unwraps to
// the envs sentinel or type the original matched.
type RemoteError struct {
	Msg  string
	kind error
}

func (e *RemoteError) Error() string { return "agent: remote: " + e.Msg }
func (e *RemoteError) Unwrap() error { return e.kind }

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	if w.Kind == "survivors" {
		return &RemoteError{Msg: w.Msg, kind: &envs.SurvivorsError{PIDs: w.PIDs}}
	}
	re := &RemoteError{Msg: w.Msg}
	for _, k := range kinds {
		if k.name == w.Kind {
			re.kind = k.err
		}
	}
	return re
}

// conn is one end of the framed stream. All writes go through one writer
// goroutine: data frames wait for their turn (that is the backpressure),
// control frames (windows, replies, EOFs) are queued without waiting, so the
// reader loop never blocks on a write. Were it to, two peers on a
// synchronous stream could each wait for the other to read.
// When the stream fails, dead is closed and err says why.
type conn struct {
	rw io.ReadWriteCloser

	mu    sync.Mutex
	queue []queued
	wake  chan struct{}

	deadOnce sync.Once
	dead     chan struct{}
	err      error // set before dead is closed
	writer   sync.WaitGroup
}

type queued struct {
	f    frame
	done chan struct{} // nil for control frames
}

func newConn(rw io.ReadWriteCloser) *conn {
	c := &conn{rw: rw, dead: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.writer.Go(c.writeLoop)
	return c
}

func (c *conn) enqueue(q queued) {
	c.mu.Lock()
	c.queue = append(c.queue, q)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// enqueueAll queues fs back to back (no other frame between them), the
// last one with done.
func (c *conn) enqueueAll(fs []frame, done chan struct{}) {
	c.mu.Lock()
	for i, f := range fs {
		q := queued{f: f}
		if i == len(fs)-1 {
			q.done = done
		}
		c.queue = append(c.queue, q)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// send queues f and waits until it is written or the connection dies.
func (c *conn) send(f frame) error {
	return c.sendAll([]frame{f})
}

// sendAll queues fs together and waits until they are written or the
// connection dies.
func (c *conn) sendAll(fs []frame) error {
	done := make(chan struct{})
	c.enqueueAll(fs, done)
	select {
	case <-done:
		return nil
	case <-c.dead:
		return c.err
	}
}

// post queues a control frame without waiting.
func (c *conn) post(f frame) {
	c.enqueue(queued{f: f})
}

func (c *conn) writeLoop() {
	var buf []byte
	for {
		select {
		case <-c.dead:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		buf = buf[:0]
		for _, it := range q {
			buf = encodeFrame(buf, it.f)
		}
		if len(buf) > 0 {
			if _, err := c.rw.Write(buf); err != nil {
				c.fail(fmt.Errorf("write: %w", err))
				return
			}
		}
		for _, it := range q {
			if it.done != nil {
				close(it.done)
			}
		}
		if cap(buf) > 4*(chunk+headerSize+16) {
			buf = nil // do not pin a burst's buffer
		}
	}
}

// sendJSON sends v as one message and waits until it is written.
func (c *conn) sendJSON(typ frameType, id uint32, v any) error {
	fs, err := jsonFrames(typ, id, v)
	if err != nil {
		return err
	}
	return c.sendAll(fs)
}

// postJSON queues v as one message without waiting. The error is an
// encoding failure (a message over MaxMessage); nothing is queued then.
func (c *conn) postJSON(typ frameType, id uint32, v any) error {
	fs, err := jsonFrames(typ, id, v)
	if err != nil {
		return err
	}
	c.enqueueAll(fs, nil)
	return nil
}

// fail marks the connection dead with cause and closes the stream, which
// unblocks the reader loop and a writer stuck in Write.
func (c *conn) fail(cause error) {
	c.deadOnce.Do(func() {
		c.err = &LostError{Cause: cause}
		close(c.dead)
		c.rw.Close()
	})
}

// close fails the connection and waits for the writer goroutine.
func (c *conn) close(cause error) {
	c.fail(cause)
	c.writer.Wait()
}

// LostError is returned by every pending and later call once the stream to
// the agent has failed (the agent was killed, its container vanished, the
// daemon restarted). It matches [ErrLost] and envs.ErrClosed.
type LostError struct {
	Cause error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("agent: connection to the agent lost: %v", e.Cause)
}

// Unwrap returns the cause.
func (e *LostError) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, ErrLost) and errors.Is(err, envs.ErrClosed) true.
func (e *LostError) Is(target error) bool { return target == ErrLost || target == envs.ErrClosed }

// ErrLost matches every [*LostError].
var ErrLost = errors.New("agent: connection lost")
