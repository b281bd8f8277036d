package agent

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// inbound is the receiving end of one stream: a buffer bounded by the
// window. Bytes are acknowledged (a window frame goes back) only as the
// reader consumes them, so a sender can never make it hold more than
// window bytes, and a reader that stops reading stalls only its own stream.
type inbound struct {
	c      *conn
	id     uint32
	stream byte

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	next    uint64 // offset expected of the next data frame
	unacked int    // consumed but not yet acknowledged
	eof     bool
	err     error // ends reads after buf is drained (nil with eof: io.EOF)
	discard bool  // the reader is gone: drop data, acknowledge at once
	ackMin  int   // the least a drained buffer acknowledges (ServerOptions.AckEvery)
}

func newInbound(c *conn, id uint32, stream byte) *inbound {
	in := &inbound{c: c, id: id, stream: stream}
	in.cond = sync.NewCond(&in.mu)
	return in
}

// push delivers a data frame. A frame out of sequence or beyond the window
// is a protocol error.
func (in *inbound) push(off uint64, b []byte) error {
	in.mu.Lock()
	if off != in.next {
		in.mu.Unlock()
		return &ProtocolError{Msg: fmt.Sprintf("channel %d stream %d: data at offset %d, want %d", in.id, in.stream, off, in.next)}
	}
	in.next += uint64(len(b))
	if in.discard || in.eof {
		in.mu.Unlock()
		in.ack(len(b))
		return nil
	}
	if len(in.buf)+in.unacked+len(b) > window {
		in.mu.Unlock()
		return &ProtocolError{Msg: fmt.Sprintf("channel %d stream %d: peer overran the window", in.id, in.stream)}
	}
	in.buf = append(in.buf, b...)
	in.cond.Broadcast()
	in.mu.Unlock()
	return nil
}

func (in *inbound) ack(n int) {
	if n > 0 {
		in.c.post(windowFrame(in.id, in.stream, uint32(n)))
	}
}

// finish ends the stream: err nil means a clean EOF.
func (in *inbound) finish(err error) {
	in.mu.Lock()
	if !in.eof {
		in.eof, in.err = true, err
	}
	in.cond.Broadcast()
	in.mu.Unlock()
}

// Read reads buffered bytes, blocking until some arrive or the stream ends.
func (in *inbound) Read(p []byte) (int, error) {
	in.mu.Lock()
	for len(in.buf) == 0 && !in.eof && !in.discard {
		in.cond.Wait()
	}
	if in.discard {
		in.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	if len(in.buf) == 0 {
		err := in.err
		in.mu.Unlock()
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n := copy(p, in.buf)
	in.buf = in.buf[n:]
	if len(in.buf) == 0 {
		in.buf = nil
	}
	in.unacked += n
	var ack int
	if in.unacked >= window/4 || len(in.buf) == 0 && in.unacked >= in.ackMin {
		ack, in.unacked = in.unacked, 0
	}
	in.mu.Unlock()
	in.ack(ack)
	return n, nil
}

// Close drops what is buffered and everything that still arrives, and
// acknowledges it so the sender is never stuck on this stream.
func (in *inbound) Close() error {
	in.mu.Lock()
	if in.discard {
		in.mu.Unlock()
		return nil
	}
	in.discard = true
	n := len(in.buf) + in.unacked
	in.buf, in.unacked = nil, 0
	in.cond.Broadcast()
	in.mu.Unlock()
	in.ack(n)
	return nil
}

// outbound is the sending end of one stream: it sends while it holds
// credit and blocks when the peer's window is full. mu guards the credit
// and is never held across a write (grant runs on the reader loop); smu
// keeps one Write's frames, and the EOF after them, in order.
type outbound struct {
	c      *conn
	id     uint32
	stream byte

	smu sync.Mutex
	off uint64 // guarded by smu

	mu     sync.Mutex
	cond   *sync.Cond
	credit int
	err    error // set when sending must stop
	closed bool  // no more data: EOF sent or being sent
}

// newOutbound returns a stream's sending end with credit bytes to send
// before the first acknowledgement: at most the window, which the peer
// allows; a sender that keeps less in flight only sends more slowly.
func newOutbound(c *conn, id uint32, stream byte, credit int) *outbound {
	if credit <= 0 || credit > window {
		credit = window
	}
	o := &outbound{c: c, id: id, stream: stream, credit: credit}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *outbound) grant(n uint32) {
	o.mu.Lock()
	o.credit += int(n)
	o.cond.Broadcast()
	o.mu.Unlock()
}

// stop makes every blocked and later Write fail with err.
func (o *outbound) stop(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.cond.Broadcast()
	o.mu.Unlock()
}

var errStreamClosed = errors.New("agent: stream closed")

// reserve waits for credit and takes up to max bytes of it.
func (o *outbound) reserve(max int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.credit == 0 && o.err == nil && !o.closed {
		o.cond.Wait()
	}
	if o.err != nil {
		return 0, o.err
	}
	if o.closed {
		return 0, errStreamClosed
	}
	n := min(o.credit, max)
	o.credit -= n
	return n, nil
}

// Write sends p in chunks as credit allows.
func (o *outbound) Write(p []byte) (int, error) {
	o.smu.Lock()
	defer o.smu.Unlock()
	written := 0
	for len(p) > 0 {
		n, err := o.reserve(min(len(p), chunk))
		if err != nil {
			return written, err
		}
		if err := o.c.send(dataFrame(o.id, o.stream, o.off, p[:n])); err != nil {
			return written, err
		}
		o.off += uint64(n)
		written += n
		p = p[n:]
	}
	return written, nil
}

// closeWith ends the stream once: EOF, with err's text when err is not nil.
func (o *outbound) closeWith(err error) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	stopped := o.err
	o.cond.Broadcast()
	o.mu.Unlock()
	if stopped != nil {
		return stopped
	}
	o.smu.Lock()
	defer o.smu.Unlock()
	o.c.post(eofFrame(o.id, o.stream, err))
	return nil
}

func (o *outbound) Close() error { return o.closeWith(nil) }

// pump copies r into o and ends the stream with r's error. If sending
// fails (the peer released the stream, the connection died), r is still
// drained to its end, so the producer is never left blocked on a pipe
// nobody reads.
func pump(o *outbound, r io.Reader) {
	buf := make([]byte, chunk)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := o.Write(buf[:n]); err != nil {
				io.Copy(io.Discard, r)
				return
			}
		}
		if rerr != nil {
			if rerr == io.EOF || errors.Is(rerr, io.ErrClosedPipe) {
				rerr = nil
			}
			o.closeWith(rerr)
			return
		}
	}
}

// Stream joins a reader and a writer into the io.ReadWriteCloser that
// [Server.Serve] and [NewClient] take: stdin and stdout of `runbox agent`,
// the two ends of a pipe pair, a command's pipes. Close closes both sides
// that are io.Closers.
func Stream(r io.Reader, w io.Writer) io.ReadWriteCloser { return &joined{r: r, w: w} }

type joined struct {
	r io.Reader
	w io.Writer
}

func (j *joined) Read(p []byte) (int, error)  { return j.r.Read(p) }
func (j *joined) Write(p []byte) (int, error) { return j.w.Write(p) }

func (j *joined) Close() error {
	var errs []error
	if c, ok := j.w.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := j.r.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
