package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbox/runbox/envs"
)

// proc is one running interpreter and the goroutines that read it. Its
// reader dispatches every frame at once (output to the running cell's
// captures, tool calls to their own goroutines, the end of a cell to its
// waiter), so a slow consumer never stalls the code's output.
type proc struct {
	p     envs.Process
	tools Tools
	pid   int

	inMu sync.Mutex // one frame at a time on stdin; guards ch.outSeq
	in   io.WriteCloser
	ch   *channel // authenticates frames; ch.inSeq is the reader's

	maxFrame int          // the longest line read from the driver
	inflight atomic.Int32 // tool calls running

	mu   sync.Mutex
	cell *cell // the running cell; nil between cells

	ready   chan frame    // the driver's hello
	dead    chan struct{} // closed when the protocol stream ends
	readErr error         // why it ended (set before dead is closed)
	stderr  *envs.Tail    // the driver's own stderr, for diagnostics
	wg      sync.WaitGroup
}

// cell is one running cell on the host side.
type cell struct {
	id             int64
	stdout, stderr *envs.Capture
	done           chan frame
	ctx            context.Context // tool calls; ends with the cell
	cancel         context.CancelFunc
	calls          sync.WaitGroup
}

// maxInflightCalls bounds the tool calls one kernel runs at once; more
// are refused at once rather than each holding a goroutine and its
// arguments.
const maxInflightCalls = 64

func startProc(ctx context.Context, env envs.Environment, cmd envs.Command, tools Tools, maxFrame int) (*proc, error) {
	ch, err := newChannel()
	if err != nil {
		return nil, err
	}
	p, err := env.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	kp := &proc{p: p, tools: tools, in: p.Stdin(), ch: ch, maxFrame: maxFrame,
		ready: make(chan frame, 1), dead: make(chan struct{}), stderr: envs.NewTail(8 << 10)}
	if kp.in == nil {
		p.Kill(ctx)
		p.Wait(ctx)
		return nil, fmt.Errorf("kernel: the environment gave the interpreter no stdin: %w", envs.ErrUnsupported)
	}
	kp.wg.Go(kp.read)
	if e := p.Stderr(); e != nil {
		kp.wg.Go(func() { io.Copy(kp.stderr, e) })
	}
	// The key goes first, before the driver runs any code; a failed
	// write shows up as the driver exiting before it is ready.
	kp.inMu.Lock()
	kp.in.Write(ch.handshake(maxFrame))
	kp.inMu.Unlock()
	return kp, nil
}

// read takes authenticated frames off the driver's stream until it ends.
// A line without a valid MAC is dropped: code in the kernel wrote it. A
// line over maxFrame ends the stream (the kernel is then killed): the
// host never holds more than one bounded line.
func (kp *proc) read() {
	lr := newLineReader(kp.p.Output(), kp.maxFrame)
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			} else {
				err = fmt.Errorf("kernel: protocol: %w", err)
			}
			kp.readErr = err
			close(kp.dead)
			// Drain what is left so the process is never blocked on a
			// full pipe while it is being killed.
			io.Copy(io.Discard, kp.p.Output())
			return
		}
		if f, ok := kp.ch.open(line); ok {
			kp.dispatch(f)
		}
	}
}

// violated reports whether the stream ended because the kernel broke the
// protocol (rather than exiting).
func (kp *proc) violated() bool {
	select {
	case <-kp.dead:
		return kp.readErr != nil
	default:
		return false
	}
}

func (kp *proc) dispatch(f frame) {
	switch f.Op {
	case "ready":
		select {
		case kp.ready <- f:
		default:
		}
	case "out":
		kp.mu.Lock()
		c := kp.cell
		kp.mu.Unlock()
		if c == nil || c.id != f.ID {
			return // output of a thread that outlived its cell
		}
		if f.Stream == "stderr" {
			c.stderr.Write(f.Data)
		} else {
			c.stdout.Write(f.Data)
		}
	case "call":
		kp.mu.Lock()
		c := kp.cell
		if c == nil || c.id != f.ID {
			kp.mu.Unlock()
			kp.send(frame{Op: "result", Call: f.Call, Error: encodeToolError(fmt.Errorf("%w: call %s after its cell finished", ErrCellFinished, f.Tool))})
			return
		}
		if kp.inflight.Add(1) > maxInflightCalls {
			kp.inflight.Add(-1)
			kp.mu.Unlock()
			kp.send(frame{Op: "result", Call: f.Call, Error: &toolErrorJSON{Kind: "busy",
				Message: fmt.Sprintf("kernel: more than %d tool calls at once", maxInflightCalls)}})
			return
		}
		c.calls.Add(1) // under mu: finish clears cell before it waits
		kp.mu.Unlock()
		go func() {
			defer c.calls.Done()
			defer kp.inflight.Add(-1)
			kp.send(kp.tools.call(c.ctx, f.Tool, f.Call, f.Args))
		}()
	case "done":
		kp.mu.Lock()
		c := kp.cell
		kp.mu.Unlock()
		if c != nil && c.id == f.ID {
			select {
			case c.done <- f:
			default:
			}
		}
	}
}

// send writes one frame to the driver. A failure means the kernel is
// going away; the reader sees that.
func (kp *proc) send(f frame) error {
	kp.inMu.Lock()
	defer kp.inMu.Unlock()
	b, err := kp.ch.seal(f)
	if err != nil {
		return err
	}
	if _, err := kp.in.Write(b); err != nil {
		return fmt.Errorf("kernel: write to the interpreter: %w", err)
	}
	return nil
}

// begin makes c the running cell.
func (kp *proc) begin(c *cell) {
	kp.mu.Lock()
	kp.cell = c
	kp.mu.Unlock()
}

// finish ends c: no frame reaches it any more, its tool calls are
// cancelled and waited for.
func (kp *proc) finish(c *cell) {
	kp.mu.Lock()
	if kp.cell == c {
		kp.cell = nil
	}
	kp.mu.Unlock()
	c.cancel()
	c.calls.Wait()
}

func (kp *proc) isDead() bool {
	select {
	case <-kp.dead:
		return true
	default:
		return false
	}
}

// kill tears the interpreter's whole tree down and waits for its readers.
func (kp *proc) kill(ctx context.Context) error {
	kp.inMu.Lock()
	kp.in.Close() // the driver exits on EOF even where kill cannot reach
	kp.inMu.Unlock()
	err := kp.p.Kill(ctx)
	kp.p.Wait(ctx)
	kp.wg.Wait()
	return err
}

// exitCode waits briefly for the process's status after its stream ended.
func (kp *proc) exitCode(ctx context.Context) (envs.ExitStatus, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	st, err := kp.p.Wait(ctx)
	return st, err == nil
}
