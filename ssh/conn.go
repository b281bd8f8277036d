package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// ErrConnectionLost is what errors wrap when the connection to the host
// failed (the peer closed it, or stopped answering keepalives).
var ErrConnectionLost = errors.New("ssh: connection lost")

// conn is one authenticated connection and the keepalive loop that
// watches it. Close stops the loop and waits for it.
type conn struct {
	client *gossh.Client
	t      target
	read   *readCounter // bytes received from the peer, read by watch

	done    chan struct{} // closed when the connection has ended
	stop    chan struct{} // closed by Close
	wg      sync.WaitGroup
	errMu   sync.Mutex
	err     error // why the connection ended
	givenUp bool  // the keepalives went unanswered: err is final
	closeMu sync.Once
}

// dial connects to t and authenticates.
func dial(ctx context.Context, t target, a *auth, hk *hostKeys, o Options) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: o.KeepaliveInterval}
	nc, err := d.DialContext(ctx, "tcp", t.addr())
	if err != nil {
		return nil, fmt.Errorf("ssh: connect to %s: %w", t.addr(), err)
	}
	// The handshake has no ctx of its own: a deadline on the socket
	// bounds it, and ctx's end closes the socket.
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	rc := &readCounter{Conn: nc}
	stopWatch := context.AfterFunc(ctx, func() { nc.Close() })
	cfg := &gossh.ClientConfig{
		User:              t.user,
		Auth:              a.methods(),
		HostKeyCallback:   hk.callback,
		HostKeyAlgorithms: hk.algorithms(t.addr()),
		Timeout:           o.DialTimeout,
	}
	c, chans, reqs, err := gossh.NewClientConn(rc, t.addr(), cfg)
	if !stopWatch() {
		if err == nil {
			c.Close()
		}
		return nil, fmt.Errorf("ssh: connect to %s: %w", t, ctx.Err())
	}
	if err != nil {
		nc.Close()
		var he *HostKeyError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, fmt.Errorf("ssh: %s: %w", t, err)
	}
	nc.SetDeadline(time.Time{})
	cn := &conn{client: gossh.NewClient(c, chans, reqs), t: t, read: rc, done: make(chan struct{}), stop: make(chan struct{})}
	cn.wg.Add(1)
	go cn.watch(o.KeepaliveInterval, o.KeepaliveMax)
	return cn, nil
}

// readCounter counts the bytes read from the peer: any of them shows the
// peer is alive.
type readCounter struct {
	net.Conn
	n atomic.Int64
}

func (r *readCounter) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.n.Add(int64(n))
	return n, err
}

// watch waits for the connection to end, sending keepalives meanwhile;
// a peer silent for max intervals has its connection closed. As with
// OpenSSH's ServerAliveInterval, anything received from the peer counts
// as an answer: a busy peer streaming output (or slow to answer a
// keepalive queued behind a large upload's window adjustments) is not
// silent.
func (c *conn) watch(interval time.Duration, max int) {
	defer c.wg.Done()
	ended := make(chan error, 1)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); ended <- c.client.Wait() }()
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	answered := make(chan struct{}, 1)
	answered <- struct{}{}
	missed := 0
	var seen int64
	for {
		select {
		case err := <-ended:
			c.end(err)
			return
		case <-c.stop:
			c.client.Close()
			c.end(<-ended)
			return
		case <-tick:
			if n := c.read.n.Load(); n != seen {
				seen, missed = n, 0
				continue
			}
			select {
			case <-answered:
				missed = 0
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					// Ends with an error when the connection closes.
					if _, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil); err == nil {
						answered <- struct{}{}
					}
				}()
			default:
				if missed++; missed >= max {
					c.giveUp(fmt.Errorf("no answer to keepalives for %s", time.Duration(missed)*interval))
					c.client.Close()
				}
			}
		}
	}
}

func (c *conn) setErr(err error) {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// giveUp records err as final before the connection is closed, so that
// what fails on the way already reads as a lost connection.
func (c *conn) giveUp(err error) {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.givenUp = true
}

func (c *conn) end(err error) {
	if err == nil {
		err = errors.New("closed by the peer")
	}
	c.setErr(err)
	close(c.done)
}

// Err is why the connection ended (or is being given up, after
// unanswered keepalives); nil while it is up.
func (c *conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.err == nil {
		return nil
	}
	select {
	case <-c.done:
	default:
		if !c.givenUp {
			return nil
		}
	}
	return fmt.Errorf("%w to %s: %v", ErrConnectionLost, c.t, c.err)
}

// check asks the peer for an answer, for a caller that saw a session end
// and must know whether the connection went with it: nil when the peer
// answers, the connection's error when it ended first. ctx bounds the wait.
func (c *conn) check(ctx context.Context) error {
	answer := make(chan error, 1)
	c.wg.Add(1)
	go func() { // ends with the reply, or when the connection closes
		defer c.wg.Done()
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		answer <- err
	}()
	select {
	case err := <-answer:
		if err == nil {
			return nil
		}
	case <-c.done:
	case <-ctx.Done():
		return fmt.Errorf("%w to %s: no answer within the check", ErrConnectionLost, c.t)
	}
	select { // the watcher records why
	case <-c.done:
	case <-ctx.Done():
	}
	if err := c.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w to %s", ErrConnectionLost, c.t)
}

// Close closes the connection and waits for its loops.
func (c *conn) Close() {
	c.closeMu.Do(func() { close(c.stop) })
	c.wg.Wait()
}
