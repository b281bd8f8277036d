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
	"runtime"
	"sync"
	"syscall"

	"github.com/runbox/runbox/envs"
)

// ServerOptions configures a [Server]. The zero value is usable.
type ServerOptions struct {
	// Build describes this agent in the handshake (release, OS/arch). Empty
	// means runtime.GOOS/runtime.GOARCH.
	Build string
	// Cwd is reported to the client as the session's initial directory.
	// Empty means none is reported.
	Cwd string
	// StateDir is where the agent keeps what outlives a stream: the change
	// journals of workspaces (undo/ there). Empty means journal calls are
	// refused as unsupported.
	StateDir string
	// Logger receives debug logs. Nil discards them. It must not write to
	// the stream being served.
	Logger *slog.Logger
	// SendWindow bounds the bytes the server has sent and the client has
	// not yet acknowledged on each stream, below the protocol's window
	// (a sender may always keep less in flight than its peer allows). 0
	// or more than the window is the window. See [TerminalSendWindow].
	SendWindow int
	// AckEvery is the least the server acknowledges of a stream it
	// receives once its reader has drained it (it always acknowledges a
	// quarter window): fewer, larger window frames for a transport that
	// turns each write into a piece of its own (see TerminalSendWindow).
	// It must stay well below the window the client sends with; 0 is
	// every read.
	AckEvery int
}

// TerminalSendWindow is the SendWindow of a server whose stream is a
// terminal. A terminal relay reads what the agent writes in pieces of at
// most a few KiB (often far less on a busy machine) and queues them for
// its client; Daytona's toolbox drops a client 256 pieces behind as a
// slow consumer, which ends the connection. A full window of 256 KiB on
// two streams can be that many pieces (148 were measured on a busy
// machine); 32 KiB still queued 92, since a busy relay reads a terminal in
// pieces of a few hundred bytes, or less: the queue grows with what is in
// flight. With every core busy, 16 KiB a stream still reached 155 pieces;
// 8 KiB stayed under 90. Runbox keeps at most 256 KiB of a command's
// output by default (output_limit), so the slower stream costs little.
const TerminalSendWindow = 8 << 10

// TerminalAckEvery is the AckEvery of a server whose stream is a
// terminal: a command's input acknowledged read by read (cat fed 1 MiB)
// is hundreds of window frames, each its own piece in the relay's queue.
const TerminalAckEvery = 16 << 10

// Server serves one environment (normally a *local.Env) to one client over
// a byte stream. It does not own the environment: the caller closes it
// after [Server.Serve] returns.
type Server struct {
	env  envs.Environment
	opts ServerOptions
	log  *slog.Logger
}

// NewServer returns a server for env.
func NewServer(env envs.Environment, opts ServerOptions) *Server {
	o := opts
	if o.Build == "" {
		o.Build = runtime.GOOS + "/" + runtime.GOARCH
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{env: env, opts: o, log: log}
}

// capabilities are the environment's, with undo as this server offers it:
// the journal is the agent's own, not the environment's.
func (s *Server) capabilities() envs.Capabilities {
	caps := maps.Clone(s.env.Capabilities())
	if caps == nil {
		caps = envs.Capabilities{}
	}
	if s.opts.StateDir == "" {
		caps[envs.CapUndo] = envs.CapInfo{State: envs.Unsupported, Detail: "the agent has no state directory for a change journal"}
	} else {
		caps[envs.CapUndo] = envs.CapInfo{State: envs.Active, Detail: "the agent records each command's workspace changes inside the environment"}
	}
	return caps
}

// session is one served stream.
type session struct {
	s    *Server
	c    *conn
	ctx  context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	chans    map[uint32]*serverChan
	work     sync.WaitGroup
	journals *journals
}

// serverChan is one channel's state on the agent side.
type serverChan struct {
	id     uint32
	in     *inbound
	outs   [streamsTotal]*outbound
	cancel context.CancelFunc // interrupts an opRun
	proc   envs.Process       // a streaming process, once started
	ready  chan struct{}      // closed once proc is set (or failed)
}

// Serve runs the protocol on rw until the client goes away, ctx ends or
// the client asks for shutdown. Before it returns it kills every streaming
// process the client left running and waits for every goroutine it
// started. It closes rw. A clean end of the stream returns nil.
func (s *Server) Serve(ctx context.Context, rw io.ReadWriteCloser) error {
	c := newConn(rw)
	ctx, stop := context.WithCancel(ctx)
	ss := &session{s: s, c: c, ctx: ctx, stop: stop, chans: map[uint32]*serverChan{}, journals: newJournals(s.opts.StateDir)}
	defer stop()
	stopWatch := context.AfterFunc(ctx, func() { c.fail(ctx.Err()) })
	defer stopWatch()

	err := ss.handshake()
	if err == nil {
		err = ss.loop()
	}
	c.fail(errors.New("agent: server stopping"))
	ss.failAll(c.err)
	ss.shutdown()
	ss.work.Wait()
	if jerr := ss.journals.close(); jerr != nil {
		s.log.Debug("agent: journals", "err", jerr)
	}
	c.close(nil)
	if errors.Is(err, io.EOF) || ctx.Err() != nil { // the client left, or the caller stopped the server
		return nil
	}
	return err
}

func (ss *session) handshake() error {
	f, err := readFrame(ss.c.rw)
	if err != nil {
		return fmt.Errorf("agent: handshake: %w", err)
	}
	var h hello
	if f.typ != frameHello || json.Unmarshal(f.payload, &h) != nil {
		return &ProtocolError{Msg: "handshake: first frame is not a hello"}
	}
	mine := hello{Version: Version, Role: "agent", Build: ss.s.opts.Build, Caps: capsToWire(ss.s.capabilities()), Cwd: ss.s.opts.Cwd}
	if err := ss.c.sendJSON(frameHello, 0, mine); err != nil {
		return err
	}
	if h.Version != Version {
		return &VersionError{Client: h.Version, Agent: Version, AgentBuild: ss.s.opts.Build}
	}
	return nil
}

func (ss *session) loop() error {
	var msgs assembler
	for {
		f, err := readFrame(ss.c.rw)
		if err == nil {
			var whole bool
			if f, whole, err = msgs.add(f); err == nil && !whole {
				continue
			}
		}
		if err != nil {
			select {
			case <-ss.c.dead:
				if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
					return io.EOF
				}
			default:
			}
			return err
		}
		if err := ss.dispatch(f); err != nil {
			return err
		}
	}
}

// out returns a channel's outbound stream, nil if there is none (yet).
func (ss *session) out(id uint32, stream byte) *outbound {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ch := ss.chans[id]; ch != nil {
		return ch.outs[stream]
	}
	return nil
}

func (ss *session) setOut(ch *serverChan, stream byte) *outbound {
	o := newOutbound(ss.c, ch.id, stream, ss.s.opts.SendWindow)
	ss.mu.Lock()
	ch.outs[stream] = o
	ss.mu.Unlock()
	return o
}

// failAll ends every stream once the connection is gone, so no pump or
// copier waits for credit or data that will never come.
func (ss *session) failAll(err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, ch := range ss.chans {
		if ch.in != nil {
			ch.in.finish(err)
		}
		for _, o := range ch.outs {
			if o != nil {
				o.stop(err)
			}
		}
	}
}

func (ss *session) get(id uint32) *serverChan {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.chans[id]
}

func (ss *session) dispatch(f frame) error {
	switch f.typ {
	case frameCall:
		var cl call
		if err := json.Unmarshal(f.payload, &cl); err != nil {
			return &ProtocolError{Msg: "bad call: " + err.Error()}
		}
		return ss.handleCall(f.id, cl)
	case frameData:
		stream, off, b := parseData(f)
		ch := ss.get(f.id)
		if stream != streamIn {
			return &ProtocolError{Msg: "client sent data on an output stream"}
		}
		if ch == nil || ch.in == nil {
			ss.c.post(windowFrame(f.id, stream, uint32(len(b)))) // late data: acknowledge and drop
			return nil
		}
		return ch.in.push(off, b)
	case frameEOF:
		if ch := ss.get(f.id); ch != nil && ch.in != nil && f.payload[0] == streamIn {
			ch.in.finish(nil)
		}
	case frameWindow:
		if o := ss.out(f.id, f.payload[0]); o != nil {
			o.grant(beUint32(f.payload[1:]))
		}
	default:
		return &ProtocolError{Msg: fmt.Sprintf("unexpected %v frame from the client", f.typ)}
	}
	return nil
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// reply answers a call. A reply that cannot be sent (its Result is over
// MaxMessage) is answered with the error instead, so the caller is never
// left waiting for a reply that was dropped.
func (ss *session) reply(id uint32, r reply) {
	err := ss.c.postJSON(frameReply, id, r)
	if err == nil {
		return
	}
	ss.s.log.Debug("agent: reply not sent", "channel", id, "err", err)
	ss.c.postJSON(frameReply, id, reply{Seq: r.Seq, Err: toWire(fmt.Errorf("agent: reply: %w", err))})
}

func (ss *session) replyErr(id uint32, seq uint64, err error) {
	ss.reply(id, reply{Seq: seq, Err: toWire(err)})
}

// newChan registers a channel; a duplicate id is a protocol error.
func (ss *session) newChan(id uint32, input bool) (*serverChan, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if id == 0 || ss.chans[id] != nil {
		return nil, &ProtocolError{Msg: fmt.Sprintf("channel %d reused", id)}
	}
	ch := &serverChan{id: id, ready: make(chan struct{})}
	if input {
		ch.in = newInbound(ss.c, id, streamIn)
		ch.in.ackMin = min(ss.s.opts.AckEvery, window/4)
	}
	ss.chans[id] = ch
	return ch, nil
}

func (ss *session) dropChan(ch *serverChan) {
	ss.mu.Lock()
	delete(ss.chans, ch.id)
	ss.mu.Unlock()
	if ch.in != nil {
		ch.in.Close()
	}
	ss.mu.Lock()
	outs := ch.outs
	ss.mu.Unlock()
	for _, o := range outs {
		if o != nil {
			o.stop(errStreamClosed)
		}
	}
}

func (ss *session) handleCall(id uint32, cl call) error {
	switch cl.Op {
	case opPing:
		ss.reply(id, reply{Seq: cl.Seq})
	case opRun:
		ch, err := ss.newChan(id, cl.Stdin)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(ss.ctx)
		ch.cancel = cancel
		close(ch.ready)
		ss.work.Go(func() { ss.run(ch, cl, ctx) })
	case opStart:
		ch, err := ss.newChan(id, true)
		if err != nil {
			return err
		}
		ss.work.Go(func() { ss.start(ch, cl) })
	case opCancel:
		if ch := ss.get(id); ch != nil && ch.cancel != nil {
			ch.cancel()
		}
		ss.reply(id, reply{Seq: cl.Seq})
	case opSignal, opKill, opResize:
		ch := ss.get(id)
		if ch == nil {
			ss.replyErr(id, cl.Seq, fmt.Errorf("agent: channel %d: %w", id, envs.ErrNotFound))
			return nil
		}
		ss.work.Go(func() { ss.control(ch, cl) })
	case opRelease:
		if ch := ss.get(id); ch != nil {
			ss.dropChan(ch)
		}
		ss.reply(id, reply{Seq: cl.Seq})
	case opPut:
		ch, err := ss.newChan(id, true)
		if err != nil {
			return err
		}
		ss.work.Go(func() { ss.put(ch, cl) })
	case opGet:
		ch, err := ss.newChan(id, false)
		if err != nil {
			return err
		}
		o := ss.setOut(ch, streamOut)
		ss.work.Go(func() { ss.getFile(ch, cl, o) })
	case opJournalBegin, opJournalEnd, opJournalSteps, opJournalUndo:
		ss.work.Go(func() { ss.journalCall(id, cl) })
	case opShutdown:
		ss.work.Go(func() {
			ss.shutdown()
			ss.reply(id, reply{Seq: cl.Seq})
		})
	default:
		ss.replyErr(id, cl.Seq, fmt.Errorf("agent: unknown call %q: %w", cl.Op, envs.ErrUnsupported))
	}
	return nil
}

func (ss *session) run(ch *serverChan, cl call, ctx context.Context) {
	defer ss.dropChan(ch)
	defer ch.cancel()
	if cl.Cmd == nil {
		ss.replyErr(ch.id, cl.Seq, fmt.Errorf("agent: run without a command: %w", envs.ErrBadCommand))
		return
	}
	cmd := cl.Cmd.command()
	if cl.Stdin {
		cmd.Stdin = ch.in
	}
	res, err := ss.s.env.Run(ctx, cmd)
	if ch.in != nil {
		ch.in.Close() // ends a stdin copier still blocked on the stream
	}
	ss.reply(ch.id, reply{Seq: cl.Seq, Result: resultToWire(res), Err: toWire(err)})
}

func (ss *session) start(ch *serverChan, cl call) {
	if cl.Cmd == nil {
		close(ch.ready)
		ss.dropChan(ch)
		ss.replyErr(ch.id, cl.Seq, fmt.Errorf("agent: start without a command: %w", envs.ErrBadCommand))
		return
	}
	cmd := cl.Cmd.command() // stream 0 feeds the process's own stdin pipe
	p, err := ss.s.env.Start(ss.ctx, cmd)
	if err != nil {
		close(ch.ready)
		ss.dropChan(ch)
		ss.replyErr(ch.id, cl.Seq, err)
		return
	}
	out := ss.setOut(ch, streamOut)
	var errOut *outbound
	if p.Stderr() != nil {
		errOut = ss.setOut(ch, streamErr)
	}
	ch.proc = p
	close(ch.ready)
	ss.reply(ch.id, reply{Seq: cl.Seq, PID: p.PID()})

	var pumps sync.WaitGroup
	pumps.Go(func() { pump(out, p.Output()) })
	if errOut != nil {
		pumps.Go(func() { pump(errOut, p.Stderr()) })
	}
	if w := p.Stdin(); w != nil {
		ss.work.Go(func() {
			_, err := io.Copy(w, ch.in)
			if err == nil {
				w.Close() // the client closed stdin
			}
		})
	}
	st, werr := p.Wait(context.WithoutCancel(ss.ctx))
	pumps.Wait()
	// Every output byte and EOF is queued before the exit, so the
	// client has the whole output once it sees the exit.
	if err := ss.c.postJSON(frameExit, ch.id, exitMsg{Status: st, Err: toWire(werr)}); err != nil {
		ss.c.postJSON(frameExit, ch.id, exitMsg{Status: st, Err: toWire(err)})
	}
	ss.dropChan(ch) // also ends the stdin copier
}

// control handles signal, kill and resize once the process has started.
func (ss *session) control(ch *serverChan, cl call) {
	<-ch.ready
	if ch.proc == nil {
		ss.replyErr(ch.id, cl.Seq, fmt.Errorf("agent: channel %d has no process: %w", ch.id, envs.ErrNotFound))
		return
	}
	var err error
	switch cl.Op {
	case opSignal:
		err = ch.proc.Signal(ss.ctx, syscall.Signal(cl.Signal))
	case opKill:
		err = ch.proc.Kill(ss.ctx)
	case opResize:
		if cl.Size == nil {
			err = fmt.Errorf("agent: resize without a size: %w", envs.ErrBadCommand)
		} else {
			err = ch.proc.Resize(ss.ctx, *cl.Size)
		}
	}
	ss.replyErr(ch.id, cl.Seq, err)
}

func (ss *session) put(ch *serverChan, cl call) {
	defer ss.dropChan(ch)
	ft, ok := ss.s.env.(envs.FileTransfer)
	var err error
	if !ok {
		err = fmt.Errorf("agent: put: %w", envs.ErrUnsupported)
	} else {
		err = ft.PutFile(ss.ctx, cl.Path, ch.in, os.FileMode(cl.Perm))
	}
	ss.replyErr(ch.id, cl.Seq, err)
}

func (ss *session) getFile(ch *serverChan, cl call, o *outbound) {
	defer ss.dropChan(ch)
	ft, ok := ss.s.env.(envs.FileTransfer)
	if !ok {
		ss.replyErr(ch.id, cl.Seq, fmt.Errorf("agent: get: %w", envs.ErrUnsupported))
		return
	}
	r, err := ft.GetFile(ss.ctx, cl.Path)
	ss.replyErr(ch.id, cl.Seq, err)
	if err != nil {
		return
	}
	defer r.Close()
	pump(o, r)
}

// shutdown kills every streaming process and interrupts every run.
func (ss *session) shutdown() {
	ss.mu.Lock()
	chans := make([]*serverChan, 0, len(ss.chans))
	for _, ch := range ss.chans {
		chans = append(chans, ch)
	}
	ss.mu.Unlock()
	var wg sync.WaitGroup
	for _, ch := range chans {
		if ch.cancel != nil {
			ch.cancel()
		}
		wg.Go(func() {
			<-ch.ready
			if ch.proc != nil {
				if err := ch.proc.Kill(context.WithoutCancel(ss.ctx)); err != nil {
					ss.s.log.Debug("agent: kill on shutdown", "channel", ch.id, "err", err)
				}
			}
		})
	}
	wg.Wait()
}
