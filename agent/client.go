package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
)

// DefaultReplyTimeout is how long a [Client] waits for an answer the
// agent owes it at once, when ClientOptions.ReplyTimeout is zero.
const DefaultReplyTimeout = 30 * time.Second

// ErrNoReply is an answer the agent owed and did not give within the
// reply timeout: it is stuck, or not an agent. The connection stays up.
var ErrNoReply = errors.New("agent: no reply")

// ClientOptions configures a [Client]. The zero value is usable.
type ClientOptions struct {
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
	// ReplyTimeout bounds every wait for an answer the agent should give
	// at once: a ping, a start, opening a file, a signal, kill or resize,
	// the shutdown in Close, the result of a PutFile once all its bytes
	// are sent, and the result of a Run once its ctx has ended and the
	// cancel is sent (the agent kills the command's tree and answers exit
	// 130; a tree that takes longer than this to die is reported as an
	// error wrapping [ErrNoReply] and the ctx's cause). It never bounds a
	// command's own run time. Zero means [DefaultReplyTimeout].
	ReplyTimeout time.Duration
}

// Client is an [envs.Environment] (and [envs.FileTransfer]) on the far side
// of a byte stream served by a [Server]. It is safe for concurrent use.
// Many commands run at once over the one stream.
//
// When the stream fails, every pending and later call fails at once with a
// [*LostError]; nothing waits for a reply that cannot come.
type Client struct {
	c     *conn
	log   *slog.Logger
	caps  envs.Capabilities
	peer  hello
	reply time.Duration // ClientOptions.ReplyTimeout, defaulted

	mu      sync.Mutex
	closed  bool
	nextID  uint32
	seq     uint64
	pending map[uint64]chan reply
	chans   map[uint32]*clientChan

	reader sync.WaitGroup
}

var _ envs.Environment = (*Client)(nil)
var _ envs.FileTransfer = (*Client)(nil)

// clientChan is one channel's state on the client side.
type clientChan struct {
	id   uint32
	outs [streamsTotal]*inbound
	in   *outbound

	exitOnce sync.Once
	exited   chan struct{}
	exit     exitMsg
}

// NewClient performs the handshake on rw and returns a client. ctx bounds
// the handshake only. A peer of another protocol version yields a
// [*VersionError]. The client owns rw: Close closes it, and so does a
// failed handshake.
func NewClient(ctx context.Context, rw io.ReadWriteCloser, opts ClientOptions) (*Client, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cl := &Client{c: newConn(rw), log: log, reply: opts.ReplyTimeout, pending: map[uint64]chan reply{}, chans: map[uint32]*clientChan{}}
	if cl.reply <= 0 {
		cl.reply = DefaultReplyTimeout
	}
	stop := context.AfterFunc(ctx, func() { cl.c.fail(fmt.Errorf("handshake: %w", context.Cause(ctx))) })
	h, err := cl.handshake()
	stop()
	if err != nil {
		cl.c.close(err)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent: handshake: %w", context.Cause(ctx))
		}
		return nil, err
	}
	cl.peer = h
	cl.caps = capsFromWire(h.Caps)
	cl.reader.Go(cl.loop)
	return cl, nil
}

func (cl *Client) handshake() (hello, error) {
	if err := cl.c.sendJSON(frameHello, 0, hello{Version: Version, Role: "client"}); err != nil {
		return hello{}, fmt.Errorf("agent: handshake: %w", err)
	}
	f, err := readFrame(cl.c.rw)
	if err != nil {
		return hello{}, fmt.Errorf("agent: handshake: no hello from the agent: %w", err)
	}
	var h hello
	if f.typ != frameHello || json.Unmarshal(f.payload, &h) != nil || h.Role != "agent" {
		return hello{}, &ProtocolError{Msg: "handshake: the peer did not answer with an agent hello"}
	}
	if h.Version != Version {
		return hello{}, &VersionError{Client: Version, Agent: h.Version, AgentBuild: h.Build}
	}
	return h, nil
}

// Done is closed when the stream to the agent has failed or been closed.
func (cl *Client) Done() <-chan struct{} { return cl.c.dead }

// Err says why the stream ended (a [*LostError]); nil while it is up.
func (cl *Client) Err() error {
	select {
	case <-cl.c.dead:
		return cl.c.err
	default:
		return nil
	}
}

// Build is the agent's self-description from the handshake.
func (cl *Client) Build() string { return cl.peer.Build }

// Cwd is the agent session's initial directory from the handshake.
func (cl *Client) Cwd() string { return cl.peer.Cwd }

func (cl *Client) loop() {
	var err error
	var msgs assembler
	for {
		var f frame
		if f, err = readFrame(cl.c.rw); err != nil {
			break
		}
		var whole bool
		if f, whole, err = msgs.add(f); err != nil {
			break
		}
		if !whole {
			continue
		}
		if err = cl.dispatch(f); err != nil {
			break
		}
	}
	cl.c.fail(err)
	cl.failAll()
}

func (cl *Client) dispatch(f frame) error {
	switch f.typ {
	case frameReply:
		var r reply
		if err := json.Unmarshal(f.payload, &r); err != nil {
			return &ProtocolError{Msg: "bad reply: " + err.Error()}
		}
		cl.mu.Lock()
		ch := cl.pending[r.Seq]
		delete(cl.pending, r.Seq)
		cl.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	case frameData:
		stream, off, b := parseData(f)
		ch := cl.get(f.id)
		if stream == streamIn {
			return &ProtocolError{Msg: "agent sent data on the input stream"}
		}
		if ch == nil || ch.outs[stream] == nil {
			cl.c.post(windowFrame(f.id, stream, uint32(len(b))))
			return nil
		}
		return ch.outs[stream].push(off, b)
	case frameEOF:
		if ch := cl.get(f.id); ch != nil && ch.outs[f.payload[0]] != nil {
			var err error
			if len(f.payload) > 1 {
				err = &RemoteError{Msg: string(f.payload[1:])}
			}
			ch.outs[f.payload[0]].finish(err)
		}
	case frameWindow:
		if ch := cl.get(f.id); ch != nil && f.payload[0] == streamIn && ch.in != nil {
			ch.in.grant(beUint32(f.payload[1:]))
		}
	case frameExit:
		var m exitMsg
		if err := json.Unmarshal(f.payload, &m); err != nil {
			return &ProtocolError{Msg: "bad exit: " + err.Error()}
		}
		if ch := cl.get(f.id); ch != nil {
			ch.setExit(m)
			cl.drop(ch)
		}
	default:
		return &ProtocolError{Msg: fmt.Sprintf("unexpected %v frame from the agent", f.typ)}
	}
	return nil
}

func (ch *clientChan) setExit(m exitMsg) {
	ch.exitOnce.Do(func() {
		ch.exit = m
		// Output the agent never opened (a command that ended before it
		// started has no stderr stream) ends with the process.
		for _, in := range ch.outs {
			if in != nil {
				in.finish(nil)
			}
		}
		if ch.in != nil {
			ch.in.stop(fmt.Errorf("agent: process exited: %w", envs.ErrClosed))
		}
		close(ch.exited)
	})
}

// failAll ends every stream and wait: the connection is gone.
func (cl *Client) failAll() {
	cl.mu.Lock()
	chans := maps.Clone(cl.chans)
	cl.mu.Unlock()
	for _, ch := range chans {
		for _, in := range ch.outs {
			if in != nil {
				in.finish(cl.c.err)
			}
		}
		if ch.in != nil {
			ch.in.stop(cl.c.err)
		}
	}
}

func (cl *Client) get(id uint32) *clientChan {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.chans[id]
}

func (cl *Client) drop(ch *clientChan) {
	cl.mu.Lock()
	delete(cl.chans, ch.id)
	cl.mu.Unlock()
}

// newChan allocates a channel with the streams asked for.
func (cl *Client) newChan(input bool, outputs ...byte) (*clientChan, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, fmt.Errorf("agent: %w", envs.ErrClosed)
	}
	if err := cl.Err(); err != nil {
		return nil, err
	}
	cl.nextID++
	if cl.nextID == 0 {
		cl.nextID = 1
	}
	ch := &clientChan{id: cl.nextID, exited: make(chan struct{})}
	if input {
		ch.in = newOutbound(cl.c, ch.id, streamIn, window)
	}
	for _, s := range outputs {
		ch.outs[s] = newInbound(cl.c, ch.id, s)
	}
	cl.chans[ch.id] = ch
	return ch, nil
}

// send sends a call and returns the channel its reply arrives on.
func (cl *Client) send(id uint32, c call) (uint64, <-chan reply, error) {
	rc := make(chan reply, 1)
	cl.mu.Lock()
	cl.seq++
	c.Seq = cl.seq
	cl.pending[c.Seq] = rc
	cl.mu.Unlock()
	if err := cl.c.sendJSON(frameCall, id, c); err != nil {
		cl.forget(c.Seq)
		return 0, nil, err
	}
	return c.Seq, rc, nil
}

func (cl *Client) forget(seq uint64) {
	cl.mu.Lock()
	delete(cl.pending, seq)
	cl.mu.Unlock()
}

// await waits for a reply, the end of the connection, ctx, or the reply
// timeout: no wait for the agent is unbounded.
func (cl *Client) await(ctx context.Context, o op, seq uint64, rc <-chan reply) (reply, error) {
	return cl.awaitFor(ctx, o, seq, rc, cl.reply)
}

// awaitFor is await with its own bound on the agent's silence.
func (cl *Client) awaitFor(ctx context.Context, o op, seq uint64, rc <-chan reply, timeout time.Duration) (reply, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-rc:
		return r, fromWire(r.Err)
	case <-cl.c.dead:
		return reply{}, cl.c.err
	case <-ctx.Done():
		cl.forget(seq)
		return reply{}, ctx.Err()
	case <-t.C:
		cl.forget(seq)
		return reply{}, fmt.Errorf("%w: %s unanswered after %v", ErrNoReply, o, timeout)
	}
}

// roundTrip sends a call and waits for its reply.
func (cl *Client) roundTrip(ctx context.Context, id uint32, c call) (reply, error) {
	seq, rc, err := cl.send(id, c)
	if err != nil {
		return reply{}, err
	}
	return cl.await(ctx, c.Op, seq, rc)
}

// Ping checks that the agent answers.
func (cl *Client) Ping(ctx context.Context) error {
	if _, err := cl.roundTrip(ctx, 0, call{Op: opPing}); err != nil {
		return fmt.Errorf("agent: ping: %w", err)
	}
	return nil
}

// feed copies r into the channel's input stream and closes it.
func feed(o *outbound, r io.Reader) {
	if _, err := io.Copy(o, r); err == nil {
		o.Close()
	}
}

// Run runs cmd in the agent's environment. Output is captured and bounded
// there; the Result comes back whole. Cancelling ctx interrupts the command
// (exit 130) — the call still waits for the agent's answer, which comes
// as soon as the tree is down, but no longer than the reply timeout
// (ClientOptions.ReplyTimeout), and not at all once the connection fails.
func (cl *Client) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("agent: run: %w", err)
	}
	ch, err := cl.newChan(cmd.Stdin != nil)
	if err != nil {
		return nil, err
	}
	defer cl.drop(ch)
	seq, rc, err := cl.send(ch.id, call{Op: opRun, Cmd: commandToWire(cmd), Stdin: cmd.Stdin != nil})
	if err != nil {
		return nil, fmt.Errorf("agent: run: %w", err)
	}
	if cmd.Stdin != nil {
		// Like os/exec's stdin copier, this ends when cmd.Stdin does or
		// when the stream is stopped below; a reader that never returns
		// keeps it, which is why it is not joined.
		go feed(ch.in, cmd.Stdin)
	}
	done := ctx.Done()
	var expired <-chan time.Time
	for {
		select {
		case r := <-rc:
			if ch.in != nil {
				ch.in.stop(fmt.Errorf("agent: command ended: %w", envs.ErrClosed))
			}
			if err := fromWire(r.Err); err != nil {
				return nil, fmt.Errorf("agent: run: %w", err)
			}
			if r.Result == nil {
				return nil, &ProtocolError{Msg: "run reply without a result"}
			}
			return r.Result.result(), nil
		case <-cl.c.dead:
			cl.forget(seq)
			return nil, fmt.Errorf("agent: run: %w", cl.c.err)
		case <-done:
			done = nil // interrupt once, then wait for the result (exit 130)
			cl.c.postJSON(frameCall, ch.id, call{Op: opCancel})
			t := time.NewTimer(cl.reply)
			defer t.Stop()
			expired = t.C
		case <-expired:
			cl.forget(seq)
			if ch.in != nil {
				ch.in.stop(fmt.Errorf("agent: run abandoned: %w", envs.ErrClosed))
			}
			return nil, fmt.Errorf("agent: run: %w: no result %v after the cancel: %w", ErrNoReply, cl.reply, context.Cause(ctx))
		}
	}
}

// Start starts cmd in the agent's environment and streams its output.
func (cl *Client) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("agent: start: %w", err)
	}
	outs := []byte{streamOut}
	if cmd.SeparateStreams && cmd.PTY == nil {
		outs = append(outs, streamErr)
	}
	ch, err := cl.newChan(true, outs...)
	if err != nil {
		return nil, err
	}
	r, err := cl.roundTrip(ctx, ch.id, call{Op: opStart, Cmd: commandToWire(cmd)})
	if err != nil {
		cl.drop(ch)
		if ctx.Err() != nil { // it may have started after all: take it down
			cl.c.postJSON(frameCall, ch.id, call{Op: opKill})
			cl.c.postJSON(frameCall, ch.id, call{Op: opRelease})
		}
		return nil, fmt.Errorf("agent: start: %w", err)
	}
	p := &process{cl: cl, ch: ch, pid: r.PID, pty: cmd.PTY != nil}
	if cmd.Stdin != nil {
		go feed(ch.in, cmd.Stdin) // ends with cmd.Stdin or when the process exits
	} else {
		p.stdin = ch.in
	}
	return p, nil
}

// Capabilities are the agent's, as reported in the handshake.
func (cl *Client) Capabilities() envs.Capabilities { return maps.Clone(cl.caps) }

// Close asks the agent to kill everything still running, then closes the
// stream and waits for the client's goroutines. ctx bounds the wait for
// the agent.
func (cl *Client) Close(ctx context.Context) error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	cl.mu.Unlock()
	var err error
	if cl.Err() == nil {
		if _, err = cl.roundTrip(ctx, 0, call{Op: opShutdown}); errors.Is(err, ErrLost) {
			err = nil // already gone: nothing left to kill over this stream
		}
	}
	cl.c.close(fmt.Errorf("agent: %w", envs.ErrClosed))
	cl.reader.Wait()
	if err != nil {
		return fmt.Errorf("agent: close: %w", err)
	}
	return nil
}

// PutFile writes r to path inside the agent's environment.
func (cl *Client) PutFile(ctx context.Context, path string, r io.Reader, perm os.FileMode) error {
	ch, err := cl.newChan(true)
	if err != nil {
		return err
	}
	defer cl.drop(ch)
	seq, rc, err := cl.send(ch.id, call{Op: opPut, Path: path, Perm: uint32(perm.Perm())})
	if err != nil {
		return fmt.Errorf("agent: put %s: %w", path, err)
	}
	fed := make(chan struct{})
	go func() { defer close(fed); feed(ch.in, r) }() // ends with r, or when the stream is stopped below
	err = cl.awaitPut(ctx, seq, rc, fed)
	ch.in.stop(fmt.Errorf("agent: put finished: %w", envs.ErrClosed))
	// After a success feed has already sent its EOF. Otherwise a reader
	// blocked in Read keeps feed until it returns, as with os/exec's
	// stdin copier; it is waited for no longer than a reply.
	t := time.NewTimer(cl.reply)
	select {
	case <-fed:
	case <-t.C:
	}
	t.Stop()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		cl.c.postJSON(frameCall, ch.id, call{Op: opRelease})
	}
	return fmt.Errorf("agent: put %s: %w", path, err)
}

// awaitPut waits for a put's reply: for as long as its bytes are still
// being sent (bounded by ctx), then no longer than the reply timeout.
func (cl *Client) awaitPut(ctx context.Context, seq uint64, rc <-chan reply, fed <-chan struct{}) error {
	var expired <-chan time.Time
	for {
		select {
		case r := <-rc:
			return fromWire(r.Err)
		case <-cl.c.dead:
			return cl.c.err
		case <-ctx.Done():
			cl.forget(seq)
			return ctx.Err()
		case <-fed:
			fed = nil
			t := time.NewTimer(cl.reply)
			defer t.Stop()
			expired = t.C
		case <-expired:
			cl.forget(seq)
			return fmt.Errorf("%w: put unanswered %v after its last byte", ErrNoReply, cl.reply)
		}
	}
}

// GetFile opens path inside the agent's environment for reading.
func (cl *Client) GetFile(ctx context.Context, path string) (io.ReadCloser, error) {
	ch, err := cl.newChan(false, streamOut)
	if err != nil {
		return nil, err
	}
	if _, err := cl.roundTrip(ctx, ch.id, call{Op: opGet, Path: path}); err != nil {
		cl.drop(ch)
		return nil, fmt.Errorf("agent: get %s: %w", path, err)
	}
	return &fileReader{cl: cl, ch: ch}, nil
}

type fileReader struct {
	cl   *Client
	ch   *clientChan
	once sync.Once
}

func (f *fileReader) Read(p []byte) (int, error) { return f.ch.outs[streamOut].Read(p) }

func (f *fileReader) Close() error {
	f.once.Do(func() {
		f.ch.outs[streamOut].Close()
		f.cl.drop(f.ch)
		if f.cl.Err() == nil {
			f.cl.c.postJSON(frameCall, f.ch.id, call{Op: opRelease})
		}
	})
	return nil
}

// process is a streaming command in the agent.
type process struct {
	cl    *Client
	ch    *clientChan
	pid   int
	pty   bool
	stdin io.WriteCloser
}

var _ envs.Process = (*process)(nil)

func (p *process) PID() int              { return p.pid }
func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Output() io.Reader     { return p.ch.outs[streamOut] }

func (p *process) Stderr() io.Reader {
	if p.ch.outs[streamErr] == nil {
		return nil
	}
	return p.ch.outs[streamErr]
}

func (p *process) exited() bool {
	select {
	case <-p.ch.exited:
		return true
	default:
		return false
	}
}

func (p *process) control(ctx context.Context, c call) error {
	if p.exited() {
		return fmt.Errorf("agent: %s %d: process exited: %w", c.Op, p.pid, envs.ErrNotFound)
	}
	_, err := p.cl.roundTrip(ctx, p.ch.id, c)
	if err != nil {
		return fmt.Errorf("agent: %s %d: %w", c.Op, p.pid, err)
	}
	return nil
}

// Signal sends sig to the command's process in the agent.
func (p *process) Signal(ctx context.Context, sig syscall.Signal) error {
	return p.control(ctx, call{Op: opSignal, Signal: int(sig)})
}

// Kill tears down the command's whole tree in the agent. A process that
// has already exited is not an error.
func (p *process) Kill(ctx context.Context) error {
	err := p.control(ctx, call{Op: opKill})
	if errors.Is(err, envs.ErrNotFound) && p.exitedOrSoon(ctx) {
		return nil
	}
	return err
}

// exitedOrSoon reports whether the exit is known (it may be in flight
// behind a not-found reply).
func (p *process) exitedOrSoon(ctx context.Context) bool {
	select {
	case <-p.ch.exited:
		return true
	case <-p.cl.c.dead:
		return false
	case <-ctx.Done():
		return false
	}
}

// Resize changes the PTY size.
func (p *process) Resize(ctx context.Context, size envs.WindowSize) error {
	if !p.pty {
		return fmt.Errorf("agent: resize: no terminal: %w", envs.ErrUnsupported)
	}
	return p.control(ctx, call{Op: opResize, Size: &size})
}

// Wait waits for the exit reported by the agent, or fails at once when the
// connection is lost.
func (p *process) Wait(ctx context.Context) (envs.ExitStatus, error) {
	select {
	case <-p.ch.exited:
		return p.ch.exit.Status, fromWire(p.ch.exit.Err)
	case <-p.cl.c.dead:
		select {
		case <-p.ch.exited: // the exit arrived before the connection ended
			return p.ch.exit.Status, fromWire(p.ch.exit.Err)
		default:
		}
		return envs.ExitStatus{}, fmt.Errorf("agent: wait %d: %w", p.pid, p.cl.c.err)
	case <-ctx.Done():
		return envs.ExitStatus{}, fmt.Errorf("agent: wait %d: %w", p.pid, ctx.Err())
	}
}
