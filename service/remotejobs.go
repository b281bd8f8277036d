package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// RelayCommand is the hidden subcommand of runbox that, inside a sandbox,
// connects its stdin and stdout to the job daemon there (starting it if
// none answers). [SandboxJobs] runs it for every call.
const RelayCommand = "__relay"

// SandboxJobs is the job registry inside a sandbox, with the same client
// interface as the local daemon's: every call starts relay (the argv of
// `runbox __relay` in the sandbox) through env and speaks the
// registry's protocol over that process's stdin and stdout. Nothing is
// re-run as a command line, and nothing is judged there: the gate runs on
// this side, in [Service.StartJob] and [Service.WriteJob], before a
// request is sent.
func SandboxJobs(env envs.Environment, relay []string) *procregistry.Client {
	return &procregistry.Client{Dial: func(ctx context.Context) (net.Conn, error) {
		p, err := env.Start(ctx, envs.Command{Args: relay, SeparateStreams: true})
		if err != nil {
			return nil, fmt.Errorf("start the job relay: %w", err)
		}
		return newProcConn(p), nil
	}}
}

// procConn is a net.Conn over a started process's stdin and stdout.
// Closing it closes stdin, which ends the relay, and waits for the
// process (bounded). A deadline that passes kills the process, which ends
// any read or write in progress.
type procConn struct {
	p   envs.Process
	in  io.WriteCloser
	out io.Reader

	mu      sync.Mutex
	timer   *time.Timer
	expired bool
	closed  bool
}

func newProcConn(p envs.Process) *procConn {
	return &procConn{p: p, in: p.Stdin(), out: p.Output()}
}

func (c *procConn) Read(b []byte) (int, error) {
	n, err := c.out.Read(b)
	if err != nil && c.isExpired() {
		return n, os.ErrDeadlineExceeded
	}
	return n, err
}

func (c *procConn) Write(b []byte) (int, error) {
	if c.in == nil {
		return 0, fmt.Errorf("job relay: %w", envs.ErrUnsupported)
	}
	n, err := c.in.Write(b)
	if err != nil && c.isExpired() {
		return n, os.ErrDeadlineExceeded
	}
	return n, err
}

// Close ends the relay: stdin closed, the process waited for (killed if
// it does not end within a few seconds).
func (c *procConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	if c.in != nil {
		c.in.Close()
	}
	drained := make(chan struct{})
	go func() { // the relay may still be writing; it ends with the process
		io.Copy(io.Discard, c.out)
		close(drained)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.p.Wait(ctx)
	if err != nil {
		kctx, kcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer kcancel()
		err = errors.Join(err, c.p.Kill(kctx))
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	}
	return err
}

func (c *procConn) isExpired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired
}

// SetDeadline kills the relay when t passes; the zero time cancels it.
func (c *procConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if t.IsZero() || c.closed {
		return nil
	}
	c.timer = time.AfterFunc(time.Until(t), func() {
		c.mu.Lock()
		c.expired = true
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.p.Kill(ctx)
	})
	return nil
}

func (c *procConn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *procConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }
func (c *procConn) LocalAddr() net.Addr                { return relayAddr{} }
func (c *procConn) RemoteAddr() net.Addr               { return relayAddr{} }

type relayAddr struct{}

func (relayAddr) Network() string { return "relay" }
func (relayAddr) String() string  { return "job relay" }
