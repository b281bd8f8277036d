package agent

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/runbox/runbox/envs"
)

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
