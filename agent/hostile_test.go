package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// hang is the bound past which a call that should have failed is a hang.
const hang = 10 * time.Second

func writeFrames(w io.Writer, fs ...frame) error {
	var b []byte
	for _, f := range fs {
		b = encodeFrame(b, f)
	}
	_, err := w.Write(b)
	return err
}

func helloFrame(role string) frame {
	fs, _ := jsonFrames(frameHello, 0, hello{Version: Version, Role: role})
	return fs[0]
}

// hostileAgent answers the handshake like an agent, then runs script on
// its end of the stream. The client has a short reply timeout. Cleanup
// closes the client and both ends, waits for script, and checks that no
// goroutine is left behind.
func hostileAgent(t *testing.T, script func(peer net.Conn)) *Client {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer b.Close()
		if _, err := readFrame(b); err != nil {
			return
		}
		if writeFrames(b, helloFrame("agent")) != nil {
			return
		}
		script(b)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	cl, err := NewClient(ctx, a, ClientOptions{ReplyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() {
		closed := make(chan error, 1)
		go func() { closed <- cl.Close(context.Background()) }()
		select {
		case <-closed:
		case <-time.After(hang):
			t.Errorf("Close hangs against a hostile agent")
		}
		b.Close()
		<-done
	})
	return cl
}

// drain reads the client's frames until the stream ends.
func drain(peer net.Conn) { io.Copy(io.Discard, peer) }

// within runs f and fails the test if it does not return within hang.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(hang):
		t.Fatalf("%s still waiting after %v", what, hang)
		return nil
	}
}

// TestClient_HostileAgent protects the client from a broken or hostile
// agent: whatever the peer sends, a pending call ends promptly with a
// LostError (whose cause says what was wrong), never a hang or a panic,
// and nothing is left running.
func TestClient_HostileAgent(t *testing.T) {
	var pe *ProtocolError
	isProtocol := func(err error) bool { return errors.As(err, &pe) }
	cases := []struct {
		name   string
		script func(peer net.Conn)
		cause  func(error) bool
	}{
		{"garbage", func(p net.Conn) {
			p.Write([]byte("\xee\x00garbage that is not a frame at all......"))
			drain(p)
		}, isProtocol},
		{"huge-length-prefix", func(p net.Conn) {
			p.Write([]byte{byte(frameReply), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
			drain(p)
		}, isProtocol},
		{"truncated-frame-then-close", func(p net.Conn) {
			p.Write(append([]byte{byte(frameReply), 0, 0, 0, 0, 0, 0, 0, 100}, "only ten b"...))
		}, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"closes-mid-header", func(p net.Conn) {
			p.Write([]byte{byte(frameReply), 0, 0})
		}, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"data-on-the-input-stream", func(p net.Conn) {
			writeFrames(p, dataFrame(1, streamIn, 0, []byte("x")))
			drain(p)
		}, isProtocol},
		{"bad-json-reply", func(p net.Conn) {
			writeFrames(p, frame{typ: frameReply, id: 0, payload: []byte("{not json")})
			drain(p)
		}, isProtocol},
		{"endless-unfinished-message", func(p net.Conn) {
			piece := make([]byte, MaxPayload)
			for id := uint32(1); ; id++ {
				if writeFrames(p, frame{typ: frameMore, id: id, payload: piece}) != nil {
					return
				}
			}
		}, isProtocol},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := hostileAgent(t, c.script)
			ctx, cancel := context.WithTimeout(t.Context(), hang)
			defer cancel()
			err := within(t, "Ping", func() error {
				<-cl.Done() // the failure is on the stream, not on the call
				return cl.Ping(ctx)
			})
			if !errors.Is(err, ErrLost) || !errors.Is(err, envs.ErrClosed) || !c.cause(err) {
				t.Fatalf("Ping after %s = %v; want a LostError with its cause", c.name, err)
			}
			if _, err := cl.Run(ctx, envs.Command{Shell: "true"}); !errors.Is(err, ErrLost) {
				t.Errorf("Run after %s = %v; want ErrLost", c.name, err)
			}
		})
	}
}

// TestClient_SilentAgent protects the bound on every wait: an agent that
// reads everything and answers nothing costs each call at most the reply
// timeout — a Run whose ctx ended included — and Close still returns.
func TestClient_SilentAgent(t *testing.T) {
	cl := hostileAgent(t, drain)
	if err := within(t, "Ping", func() error { return cl.Ping(context.Background()) }); !errors.Is(err, ErrNoReply) {
		t.Errorf("Ping = %v; want ErrNoReply", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := within(t, "Run", func() error {
		_, err := cl.Run(ctx, envs.Command{Shell: "sleep 100"})
		return err
	})
	if !errors.Is(err, ErrNoReply) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run with an expired ctx = %v; want ErrNoReply and DeadlineExceeded", err)
	}
	err = within(t, "Start", func() error {
		_, err := cl.Start(context.Background(), envs.Command{Shell: "true"})
		return err
	})
	if !errors.Is(err, ErrNoReply) {
		t.Errorf("Start = %v; want ErrNoReply", err)
	}
	err = within(t, "PutFile", func() error {
		return cl.PutFile(context.Background(), "f", io.LimitReader(zeroReader{}, 1000), 0o600)
	})
	if !errors.Is(err, ErrNoReply) {
		t.Errorf("PutFile = %v; want ErrNoReply", err)
	}
	if cl.Err() != nil {
		t.Errorf("a silent agent closed the connection: %v", cl.Err())
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestNewClient_HostileHandshake: a peer that answers the hello with
// garbage or a huge frame is refused with a ProtocolError at once.
func TestNewClient_HostileHandshake(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, answer := range map[string][]byte{
		"garbage":    []byte("HTTP/1.1 400 Bad Request\r\n\r\n"),
		"huge":       {byte(frameHello), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		"not-agent":  encodeFrame(nil, helloFrame("client")),
		"not-hello":  encodeFrame(nil, frame{typ: frameReply, payload: []byte("{}")}),
		"bad-length": {byte(frameHello), 0, 0, 0, 0, 0, 0, 0, 50, '{'},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			go func() {
				if _, err := readFrame(b); err == nil {
					b.Write(answer)
				}
				b.Close()
			}()
			ctx, cancel := context.WithTimeout(t.Context(), hang)
			defer cancel()
			err := within(t, "NewClient", func() error {
				_, err := NewClient(ctx, a, ClientOptions{})
				return err
			})
			if err == nil || ctx.Err() != nil {
				t.Fatalf("NewClient against %s = %v; want a prompt error", name, err)
			}
		})
	}
}

// rawClient is a hand-driven client end of a stream served by a Server
// over a fresh local environment.
type rawClient struct {
	peer   net.Conn
	served chan error
	cancel context.CancelFunc
}

func serveRaw(t *testing.T) *rawClient { return serveRawWith(t, ServerOptions{}) }

func serveRawWith(t *testing.T, opts ServerOptions) *rawClient {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	rc := &rawClient{peer: a, served: make(chan error, 1), cancel: cancel}
	srv := NewServer(env, opts)
	go func() { rc.served <- srv.Serve(ctx, b) }()
	t.Cleanup(func() {
		cancel()
		a.Close()
		select {
		case <-rc.served:
		case <-time.After(hang):
			t.Errorf("Serve did not return after its stream closed")
		}
		env.Close(context.Background())
	})
	return rc
}

func (rc *rawClient) handshake(t *testing.T) {
	t.Helper()
	if err := writeFrames(rc.peer, helloFrame("client")); err != nil {
		t.Fatalf("write hello: %v", err)
	}
	if f, err := readFrame(rc.peer); err != nil || f.typ != frameHello {
		t.Fatalf("server hello = %v, %v", f.typ, err)
	}
}

// served waits for Serve to return.
func (rc *rawClient) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-rc.served:
		rc.served <- err // for Cleanup
		return err
	case <-time.After(hang):
		t.Fatalf("Serve still running %v after the hostile input", hang)
		return nil
	}
}

// TestServer_HostileClient protects the agent from a broken or hostile
// client: Serve returns promptly with an error saying what was wrong, and
// never allocates what a header claims.
func TestServer_HostileClient(t *testing.T) {
	var pe *ProtocolError
	cases := []struct {
		name      string
		handshake bool
		send      []byte
		close     bool
		want      func(error) bool
	}{
		{"garbage-instead-of-hello", false, []byte("GET / HTTP/1.1\r\n\r\n"), false, func(err error) bool { return errors.As(err, &pe) }},
		{"huge-hello", false, []byte{byte(frameHello), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, false, func(err error) bool { return errors.As(err, &pe) }},
		{"garbage-after-hello", true, []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), false, func(err error) bool { return errors.As(err, &pe) }},
		{"huge-length-prefix", true, []byte{byte(frameCall), 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf0}, false, func(err error) bool { return errors.As(err, &pe) }},
		{"bad-json-call", true, encodeFrame(nil, frame{typ: frameCall, id: 1, payload: []byte("{")}), false, func(err error) bool { return errors.As(err, &pe) }},
		{"truncated-frame-then-close", true, []byte{byte(frameCall), 0, 0, 0, 1, 0, 0, 1, 0, '{'}, true, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := serveRaw(t)
			if c.handshake {
				rc.handshake(t)
			}
			go func() { // the server may stop reading halfway
				rc.peer.Write(c.send)
				if c.close {
					rc.peer.Close()
				} else {
					drain(rc.peer)
				}
			}()
			if err := rc.wait(t); !c.want(err) {
				t.Fatalf("Serve after %s = %v", c.name, err)
			}
		})
	}
}

// TestServer_SilentClient: a client that never says hello holds the
// server only until its ctx ends.
func TestServer_SilentClient(t *testing.T) {
	rc := serveRaw(t)
	rc.cancel()
	if err := rc.wait(t); err != nil {
		t.Fatalf("Serve after its ctx ended = %v; want nil", err)
	}
}

// TestServer_ClientGoneMidFrame protects the sandbox from orphans: a
// client that dies halfway through a frame ends the session, and the
// process it had started is killed.
func TestServer_ClientGoneMidFrame(t *testing.T) {
	rc := serveRaw(t)
	rc.handshake(t)
	fs, _ := jsonFrames(frameCall, 1, call{Seq: 1, Op: opStart, Cmd: commandToWire(envs.Command{Shell: "sleep 300"})})
	if err := writeFrames(rc.peer, fs...); err != nil {
		t.Fatal(err)
	}
	var pid int
	for pid == 0 {
		f, err := readFrame(rc.peer)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var r reply
		if f.typ == frameReply && json.Unmarshal(f.payload, &r) == nil {
			if r.Err != nil || r.PID == 0 {
				t.Fatalf("start reply: %+v", r)
			}
			pid = r.PID
		}
	}
	go drain(rc.peer)
	rc.peer.Write([]byte{byte(frameCall), 0, 0, 0, 2, 0, 0, 0, 50, '{', '"'})
	rc.peer.Close()
	if err := rc.wait(t); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Serve after a cut frame = %v; want an unexpected EOF", err)
	}
	deadline := time.Now().Add(hang)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after its client went away", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling a pid, which has no wait channel here
	}
}

// TestServer_SendWindowBoundsWhatIsInFlight: a server given a send window
// below the protocol's (an agent on a terminal) never has more than it
// unacknowledged on a stream, however much the command writes, and sends
// the rest once the client acknowledges.
func TestServer_SendWindowBoundsWhatIsInFlight(t *testing.T) {
	const sendWindow, total = 8 << 10, 64 << 10
	rc := serveRawWith(t, ServerOptions{SendWindow: sendWindow})
	rc.handshake(t)
	fs, _ := jsonFrames(frameCall, 1, call{Seq: 1, Op: opStart, Cmd: commandToWire(envs.Command{Shell: fmt.Sprintf("head -c %d /dev/zero", total)})})
	if err := writeFrames(rc.peer, fs...); err != nil {
		t.Fatal(err)
	}
	frames := make(chan frame)
	go func() {
		defer close(frames)
		for {
			f, err := readFrame(rc.peer)
			if err != nil {
				return
			}
			frames <- f
		}
	}()
	// next returns the next stdout data frame's length, or -1 if none
	// comes within quiet (a negative check: a slow machine only makes it
	// wait longer for data that must not come).
	next := func(quiet time.Duration) int {
		for {
			select {
			case f, ok := <-frames:
				if !ok {
					t.Fatal("stream ended")
				}
				if f.typ != frameData {
					continue
				}
				if stream, _, b := parseData(f); stream == streamOut {
					return len(b)
				}
			case <-time.After(quiet):
				return -1
			}
		}
	}
	got := 0
	for got < sendWindow {
		n := next(hang)
		if n < 0 {
			t.Fatalf("only %d bytes arrived before the window was used", got)
		}
		got += n
	}
	if got > sendWindow {
		t.Fatalf("%d bytes in flight; the send window is %d", got, sendWindow)
	}
	if n := next(300 * time.Millisecond); n >= 0 {
		t.Fatalf("%d more bytes arrived past the send window of %d before any acknowledgement", n, sendWindow)
	}
	for got < total {
		if err := writeFrames(rc.peer, windowFrame(1, streamOut, uint32(sendWindow))); err != nil {
			t.Fatal(err)
		}
		for acked := got + sendWindow; got < min(acked, total); {
			n := next(hang)
			if n < 0 {
				t.Fatalf("the rest did not come after an acknowledgement (%d of %d bytes)", got, total)
			}
			got += n
		}
	}
	rc.cancel()
	go func() {
		for range frames {
		}
	}()
}
