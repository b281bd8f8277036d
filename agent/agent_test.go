package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/local"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// pair returns the two ends of a byte stream: a net.Pipe (synchronous,
// no buffering) or a pair of OS pipes (what `runbox agent` gets).
type pair func(t *testing.T) (client, server io.ReadWriteCloser)

func netPipe(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
	a, b := net.Pipe()
	return a, b
}

func osPipes(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return agent.Stream(cr, cw), agent.Stream(sr, sw)
}

// served is a local environment served over one stream, with its client.
type served struct {
	client    *agent.Client
	clientEnd io.ReadWriteCloser
	serverEnd io.ReadWriteCloser
	served    chan error
}

// serve starts a server for a fresh local environment on one end of a
// stream and a client on the other. Cleanup closes the client, waits for
// Serve to return and closes the environment.
func serve(t *testing.T, mk pair) *served {
	t.Helper()
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	ce, se := mk(t)
	s := &served{clientEnd: ce, serverEnd: se, served: make(chan error, 1)}
	srv := agent.NewServer(env, agent.ServerOptions{StateDir: t.TempDir()})
	go func() { s.served <- srv.Serve(context.Background(), se) }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s.client, err = agent.NewClient(ctx, ce, agent.ClientOptions{})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() {
		s.client.Close(context.Background())
		select {
		case <-s.served:
		case <-time.After(30 * time.Second):
			t.Errorf("Serve did not return after the client closed")
		}
		env.Close(context.Background())
	})
	return s
}

// TestConformance runs the contract suite through the agent over both
// kinds of stream: what passes on local must pass through the protocol.
func TestConformance(t *testing.T) {
	for name, mk := range map[string]pair{"NetPipe": netPipe, "OSPipes": osPipes} {
		t.Run(name, func(t *testing.T) {
			envtest.Run(t, func(t *testing.T) envs.Environment { return serve(t, mk).client })
		})
	}
}

// TestClient_DeadStreamFailsFast protects the no-hang rule: when the agent
// dies mid-command (here its end of the stream is closed), the pending
// Run, a streaming process's Wait and its Output all fail at once with
// ErrLost instead of waiting for a reply that cannot come.
func TestClient_DeadStreamFailsFast(t *testing.T) {
	s := serve(t, osPipes)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	p, err := s.client.Start(ctx, envs.Command{Shell: "echo up; sleep 30"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(p.Output(), buf); err != nil {
		t.Fatalf("read output: %v", err)
	}
	runErr := make(chan error, 1)
	go func() {
		_, err := s.client.Run(ctx, envs.Command{Shell: "sleep 30"})
		runErr <- err
	}()
	if err := s.client.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	start := time.Now()
	s.serverEnd.Close() // the agent is gone
	if err := <-runErr; !errors.Is(err, agent.ErrLost) || !errors.Is(err, envs.ErrClosed) {
		t.Errorf("pending Run error = %v; want ErrLost (and ErrClosed)", err)
	}
	if _, err := p.Wait(ctx); !errors.Is(err, agent.ErrLost) {
		t.Errorf("Wait error = %v; want ErrLost", err)
	}
	if _, err := io.ReadAll(p.Output()); !errors.Is(err, agent.ErrLost) {
		t.Errorf("Output read error = %v; want ErrLost", err)
	}
	if _, err := s.client.Run(ctx, envs.Command{Shell: "true"}); !errors.Is(err, agent.ErrLost) {
		t.Errorf("Run after loss = %v; want ErrLost", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing the pending calls took %v", d)
	}
}

// TestClient_SlowReaderDoesNotWedgeOthers protects the flow control: a
// process whose output nobody reads fills only its own window, and other
// commands on the same stream keep running.
func TestClient_SlowReaderDoesNotWedgeOthers(t *testing.T) {
	s := serve(t, netPipe)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p, err := s.client.Start(ctx, envs.Command{Shell: "head -c 20000000 /dev/zero; echo done"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	for i := range 5 {
		res, err := s.client.Run(ctx, envs.Command{Shell: "echo ok"})
		if err != nil || res.Output != "ok\n" {
			t.Fatalf("Run %d beside a stalled stream = %v, %v", i, res, err)
		}
	}
	if err := s.client.PutFile(ctx, "f.bin", io.LimitReader(zeros{}, 3<<20), 0o600); err != nil {
		t.Fatalf("PutFile beside a stalled stream: %v", err)
	}
	n, err := io.Copy(io.Discard, p.Output())
	if err != nil || n != 20000000+5 {
		t.Fatalf("stalled stream delivered %d bytes, %v; want %d", n, err, 20000000+5)
	}
	if st, err := p.Wait(ctx); err != nil || st.Code != 0 {
		t.Fatalf("Wait = %+v, %v", st, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestClient_Files round-trips a file larger than the window and checks
// that a missing file is ErrNotFound on this side of the stream.
func TestClient_Files(t *testing.T) {
	s := serve(t, osPipes)
	ctx := t.Context()
	data := make([]byte, 1<<20+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := s.client.PutFile(ctx, "sub/dir/file", bytesReader(data), 0o640); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	r, err := s.client.GetFile(ctx, "sub/dir/file")
	if err != nil {
		t.Fatalf("GetFile: %v", err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != string(data) {
		t.Fatalf("GetFile returned %d bytes, %v; want the %d put", len(got), err, len(data))
	}
	res, err := s.client.Run(ctx, envs.Command{Shell: "stat -c %a sub/dir/file"})
	if err != nil || res.Output != "640\n" {
		t.Errorf("mode of the put file = %q, %v; want 640", res.Output, err)
	}
	if _, err := s.client.GetFile(ctx, "no/such/file"); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("GetFile of a missing file = %v; want ErrNotFound", err)
	}
	// A reader closed early releases its stream.
	r, err = s.client.GetFile(ctx, "sub/dir/file")
	if err != nil {
		t.Fatal(err)
	}
	r.Read(make([]byte, 10))
	r.Close()
	if err := s.client.Ping(ctx); err != nil {
		t.Fatalf("Ping after an early close: %v", err)
	}
}

type bytesReaderT struct {
	b []byte
}

func bytesReader(b []byte) io.Reader { return &bytesReaderT{b} }

func (r *bytesReaderT) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestClient_ResultLargerThanAFrame protects results bigger than one
// frame: a command that prints 1.5 MB with a 2 MB output limit comes back
// whole (the reply spans frames). Before protocol version 2 the agent
// dropped such a reply and the call waited forever, its ctx ignored.
func TestClient_ResultLargerThanAFrame(t *testing.T) {
	const n = 1500000
	for name, mk := range map[string]pair{"NetPipe": netPipe, "OSPipes": osPipes} {
		t.Run(name, func(t *testing.T) {
			s := serve(t, mk)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			start := time.Now()
			res, err := s.client.Run(ctx, envs.Command{
				Shell:           fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; head -c %d /dev/zero | tr '\\0' b >&2", n, n/2),
				OutputLimit:     2 << 20,
				SeparateStreams: true,
			})
			if err != nil {
				t.Fatalf("Run = %v after %v", err, time.Since(start))
			}
			if len(res.Output) != n || strings.Trim(res.Output, "a") != "" || len(res.Stderr) != n/2 || res.Truncated {
				t.Fatalf("Run returned %d bytes of output and %d of stderr (truncated %v); want %d and %d, whole", len(res.Output), len(res.Stderr), res.Truncated, n, n/2)
			}
			if err := s.client.Ping(ctx); err != nil {
				t.Fatalf("Ping after the large result: %v", err)
			}
		})
	}
}
