package procregistry

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Client calls a [Server] over its Unix socket. Each call is one
// connection, so a Client is safe for concurrent use and has nothing to
// close. Errors match the registry's (errors.Is with envs.ErrNotFound,
// ErrAmbiguous, ...), and the transport's own: [ErrUnreachable] when no
// server answers, [ErrConnLost] when the connection ends before the
// answer. A call refused with [ErrOverloaded] is retried for up to
// overloadWait (within ctx). The server must run as this user: its peer
// uid is checked on every connection, as the server checks ours.
type Client struct {
	// Path is the server's socket.
	Path string
	// Dial, when set, opens each connection instead of dialling Path: a
	// registry reached through another channel, such as a relay process
	// inside a sandbox started over the agent. The channel then answers
	// for who is on the other end (no peer uid check), and a deadline set
	// on the connection must end any read or write in progress.
	Dial func(ctx context.Context) (net.Conn, error)
	// Owner and Token, when Token is set, make every call act for Owner:
	// the first such call claims Owner for Token, and the server then
	// refuses every call on Owner's jobs and events that neither holds
	// Token nor comes from a process of one of Owner's jobs (see
	// "Owners" in the package documentation). Keep Token in this
	// process's memory only: never in an environment, an argv or a file.
	// Empty means the server decides who the caller is from its process.
	Owner, Token string
}

// As returns a copy of c that acts for owner with a fresh random token
// (see [Client].Token). Nothing is sent until its first call.
func (c *Client) As(owner string) *Client {
	cp := *c
	cp.Owner, cp.Token = owner, rand.Text()+rand.Text()
	return &cp
}

// Transport errors of a [Client].
var (
	// ErrUnreachable: nothing answered at the socket (no server runs, or
	// it is still starting). The request was not sent.
	ErrUnreachable = errors.New("procregistry: no server answers")
	// ErrConnLost: the connection ended before the server's final answer
	// (the server died, or closed the connection). The call may have
	// taken effect. A read can be asked again from where it stopped:
	// Follow returns the offset after the last byte it wrote, Events
	// returns what is still unacknowledged, Wait the job's state.
	ErrConnLost = errors.New("procregistry: connection to the server lost")
)

// overloadWait bounds how long a call refused with ErrOverloaded is
// retried: the server refused it unread, so trying again is safe.
const overloadWait = 10 * time.Second

// call sends q and decodes the final frame's result into out; data
// frames go to w.
func (c *Client) call(ctx context.Context, q request, out any, w io.Writer) error {
	deadline := time.Now().Add(overloadWait)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		err := c.callOnce(ctx, q, out, w)
		if !errors.Is(err, ErrOverloaded) || time.Now().Add(delay).After(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.Dial != nil {
		return c.Dial(ctx)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", c.Path)
}

func (c *Client) callOnce(ctx context.Context, q request, out any, w io.Writer) error {
	conn, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("procregistry: %s: %w", q.Op, ctx.Err())
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer conn.Close()
	if c.Dial == nil {
		if err := CheckPeer(conn); err != nil {
			return fmt.Errorf("procregistry: %s: %w", c.Path, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	q.As, q.Token = c.Owner, c.Token
	b, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("procregistry: %s: %w", q.Op, err)
	}
	// A write that fails may still have an answer waiting: a server that
	// refuses a request closes the connection after saying why.
	_, werr := conn.Write(append(b, '\n'))
	dec := json.NewDecoder(bufio.NewReaderSize(conn, 64<<10))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("procregistry: %s: %w", q.Op, ctx.Err())
			}
			if werr != nil {
				err = werr
			}
			return fmt.Errorf("%w: %s: %w", ErrConnLost, q.Op, err)
		}
		if f.Data != nil && w != nil {
			if _, err := w.Write(f.Data); err != nil {
				return err
			}
			continue
		}
		if f.Result != nil && out != nil {
			if err := json.Unmarshal(f.Result, out); err != nil {
				return fmt.Errorf("procregistry: %s: %w", q.Op, err)
			}
		}
		if f.Error != nil {
			return f.Error.err()
		}
		return nil
	}
}

// Ping checks that a server answers and returns its PID.
func (c *Client) Ping(ctx context.Context) (int, error) {
	var pid int
	err := c.call(ctx, request{Op: "ping"}, &pid, nil)
	return pid, err
}

// Start is [Registry.Start].
func (c *Client) Start(ctx context.Context, req StartRequest) (Info, error) {
	var in Info
	err := c.call(ctx, request{Op: "start", Start: &req}, &in, nil)
	return in, err
}

// List is [Registry.List].
func (c *Client) List(ctx context.Context, owner string) ([]Info, error) {
	var out []Info
	err := c.call(ctx, request{Op: "list", Owner: owner}, &out, nil)
	return out, err
}

// Get is [Registry.Get].
func (c *Client) Get(ctx context.Context, id string) (Info, error) {
	var in Info
	err := c.call(ctx, request{Op: "get", ID: id}, &in, nil)
	return in, err
}

// Poll is [Registry.Poll].
func (c *Client) Poll(ctx context.Context, id string) (Poll, error) {
	var p Poll
	err := c.call(ctx, request{Op: "poll", ID: id}, &p, nil)
	return p, err
}

// ReadLog is [Registry.ReadLog].
func (c *Client) ReadLog(ctx context.Context, id string, offset int64, limit int) (Chunk, error) {
	var ch Chunk
	err := c.call(ctx, request{Op: "log", ID: id, Offset: offset, Limit: limit}, &ch, nil)
	return ch, err
}

// TailLines is [Registry.TailLines].
func (c *Client) TailLines(ctx context.Context, id string, n int) (Chunk, error) {
	var ch Chunk
	err := c.call(ctx, request{Op: "tail", ID: id, Lines: n}, &ch, nil)
	return ch, err
}

// Follow is [Registry.Follow]. On a lost connection it returns the
// offset after the last byte it wrote, from which to continue.
func (c *Client) Follow(ctx context.Context, id string, offset int64, w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	var next int64
	err := c.call(ctx, request{Op: "follow", ID: id, Offset: offset}, &next, cw)
	if err != nil {
		return offset + cw.n, err
	}
	return next, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Wait is [Registry.Wait].
func (c *Client) Wait(ctx context.Context, id string, timeout time.Duration) (Info, bool, error) {
	var res waitResult
	err := c.call(ctx, request{Op: "wait", ID: id, Timeout: timeout}, &res, nil)
	return res.Info, res.Done, err
}

// Kill is [Registry.Kill].
func (c *Client) Kill(ctx context.Context, id string) (KillResult, error) {
	var res KillResult
	err := c.call(ctx, request{Op: "kill", ID: id}, &res, nil)
	return res, err
}

// Write is [Registry.Write].
func (c *Client) Write(ctx context.Context, id string, data []byte) error {
	return c.call(ctx, request{Op: "write", ID: id, Data: data}, nil, nil)
}

// Submit is [Registry.Submit].
func (c *Client) Submit(ctx context.Context, id, text string) error {
	return c.call(ctx, request{Op: "submit", ID: id, Data: []byte(text)}, nil, nil)
}

// CloseStdin is [Registry.CloseStdin].
func (c *Client) CloseStdin(ctx context.Context, id string) error {
	return c.call(ctx, request{Op: "close", ID: id}, nil, nil)
}

// SetLifetime is [Registry.SetLifetime].
func (c *Client) SetLifetime(ctx context.Context, id string, l Lifetime) (Info, error) {
	var in Info
	err := c.call(ctx, request{Op: "set_lifetime", ID: id, Lifetime: l}, &in, nil)
	return in, err
}

// Handoff is [Registry.Handoff].
func (c *Client) Handoff(ctx context.Context, id, owner, note string) (Info, error) {
	var in Info
	err := c.call(ctx, request{Op: "handoff", ID: id, Owner: owner, Note: note}, &in, nil)
	return in, err
}

// EndSession is [Registry.EndSession].
func (c *Client) EndSession(ctx context.Context, owner string) ([]KillResult, error) {
	var res []KillResult
	err := c.call(ctx, request{Op: "end_session", Owner: owner}, &res, nil)
	return res, err
}

// Events is [Registry.Events].
func (c *Client) Events(ctx context.Context, consumer string, wait bool) ([]Event, error) {
	var evs []Event
	err := c.call(ctx, request{Op: "events", Consumer: consumer, Wait: wait}, &evs, nil)
	return evs, err
}

// Ack is [Registry.Ack].
func (c *Client) Ack(ctx context.Context, consumer string, seq int64) error {
	return c.call(ctx, request{Op: "ack", Consumer: consumer, Seq: seq}, nil, nil)
}
