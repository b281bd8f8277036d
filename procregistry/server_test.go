package procregistry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/local"
)

// serveTest serves a fresh registry with srv's limits on a socket in a
// temp dir. Cleanup stops the server and fails the test if Serve had
// returned before (a server must keep serving whatever clients do).
func serveTest(t *testing.T, srv Server) (*Registry, *Client, <-chan error) {
	t.Helper()
	r := newTestRegistry(t, "", nil)
	srv.Reg = r
	path := filepath.Join(t.TempDir(), "run", "s.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	})
	return r, &Client{Path: path}, errc
}

// assertServing fails if Serve has returned.
func assertServing(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}

// readFrame reads one answer frame from a raw connection (bounded).
func readFrame(t *testing.T, c net.Conn) (frame, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(line, &f); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return f, nil
}

func dialRaw(t *testing.T, c *Client) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", c.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// An 8 MiB request line is answered with an error and its connection
// closed after at most MaxRequest bytes were read; the server goes on
// serving, and a client's oversized call gets ErrRequestTooLarge.
// Breaks if a request is read whole into memory.
func TestServer_OversizedRequest(t *testing.T) {
	_, c, errc := serveTest(t, Server{})
	conn := dialRaw(t, c)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		// No newline: the server must stop reading on its own. The write
		// fails once it closes the connection.
		conn.Write(bytes.Repeat([]byte("a"), 8<<20))
	})
	f, err := readFrame(t, conn)
	if err != nil || f.Error == nil || f.Error.Kind != "too_large" {
		t.Fatalf("answer to 8 MiB: %+v, %v; want a too_large error", f.Error, err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection stayed open after the refusal")
	}
	conn.Close()

	if _, err := c.Ping(t.Context()); err != nil {
		t.Fatalf("ping after an oversized request: %v", err)
	}
	err = c.Write(t.Context(), "0123456789ab", bytes.Repeat([]byte("x"), 2<<20))
	if !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("client call of 2 MiB: %v; want ErrRequestTooLarge", err)
	}
	if _, err := c.List(t.Context(), ""); err != nil {
		t.Errorf("list after an oversized call: %v", err)
	}
	assertServing(t, errc)
}

// A client that holds every connection cannot lock the others out:
// with MaxConns idle connections open (connected, no request sent), each
// new client is served, and room is made by closing the oldest idle
// connection first (answered ErrOverloaded, so a client whose request was
// not read yet asks again); connections held by waiting calls (wait, follow) are
// closed oldest first too, and their callers see ErrConnLost, from which
// they ask again. Breaks if extra connections are refused while the held
// ones are idle or waiting (what a full server did before), or if the
// server stops serving.
func TestServer_ConnectionLockout(t *testing.T) {
	const max = 8
	r, c, errc := serveTest(t, Server{MaxConns: max})
	var held []net.Conn
	for range max {
		held = append(held, dialRaw(t, c))
	}
	for i := range max {
		if i > 0 {
			held = append(held, dialRaw(t, c)) // full again
		}
		if _, err := c.List(t.Context(), ""); err != nil {
			t.Fatalf("list %d with %d idle connections held: %v", i, max, err)
		}
		// The oldest idle connection was told and closed to make room.
		f, err := readFrame(t, held[i])
		if err != nil || f.Error == nil || f.Error.Kind != "overloaded" {
			t.Fatalf("held connection %d after list %d: %+v, %v; want overloaded", i, i, f.Error, err)
		}
		if _, err := io.Copy(io.Discard, held[i]); err != nil {
			t.Fatalf("held connection %d after list %d: %v; want closed", i, i, err)
		}
	}
	assertServing(t, errc)

	// Waiting calls: max of them on a job that runs until the end.
	in := start(t, r, StartRequest{Shell: "sleep 600", Owner: "tester"})
	t.Cleanup(func() { r.Kill(context.Background(), in.ID) })
	errs := make(chan error, max)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range max {
		wg.Go(func() {
			_, _, err := c.Wait(ctx, in.ID, 0)
			errs <- err
		})
	}
	// Lists go on being served; once the waits hold every slot, the
	// next list closes the oldest of them.
	deadline := time.After(60 * time.Second)
	for evicted := false; !evicted; {
		if _, err := c.List(t.Context(), ""); err != nil {
			t.Fatalf("list with waiting calls held: %v", err)
		}
		select {
		case err := <-errs:
			if !errors.Is(err, ErrConnLost) {
				t.Fatalf("evicted wait: %v; want ErrConnLost", err)
			}
			evicted = true
		case <-deadline:
			t.Fatal("no waiting call was closed to make room")
		default:
		}
	}
	cancel()
	assertServing(t, errc)
}

// A connection that sends no request within IdleTimeout is closed, which
// frees its slot without the client's help; a follow waiting for output
// longer than that is not idle and gets every byte. Breaks if idle
// clients can hold the server's slots forever, or if long follows are
// cut off.
func TestServer_IdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	r, c, errc := serveTest(t, Server{MaxConns: 4, IdleTimeout: idle})
	var held []net.Conn
	for range 4 {
		held = append(held, dialRaw(t, c))
	}
	for _, h := range held {
		f, err := readFrame(t, h)
		if err != nil || f.Error == nil || !strings.Contains(f.Error.Msg, "no request within") {
			t.Fatalf("idle connection: %+v, %v; want closed with a timeout", f.Error, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		t.Fatalf("ping after the idle connections timed out (still open on the client): %v", err)
	}
	// The job is quiet for 5 idle timeouts before it writes.
	in := start(t, r, StartRequest{Shell: "echo early; sleep 1; echo late"})
	var out bytes.Buffer
	if _, err := c.Follow(ctx, in.ID, 0, &out); err != nil || out.String() != "early\nlate\n" {
		t.Fatalf("follow across a quiet second: %q, %v", out.String(), err)
	}
	in2 := start(t, r, StartRequest{Shell: "sleep 1; exit 3"})
	got, done, err := c.Wait(ctx, in2.ID, 0)
	if err != nil || !done || got.Exit == nil || got.Exit.Code != 3 {
		t.Fatalf("wait across a quiet second: %+v, %v, %v", got, done, err)
	}
	assertServing(t, errc)
}

// Out of file descriptors (EMFILE on accept), the server waits and
// retries instead of exiting, and serves again once descriptors free
// up. The server is a process of its own whose limit is lowered to a
// few descriptors more than it holds. Breaks if an Accept error ends
// Serve.
func TestServer_AcceptOutOfDescriptors(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	exe, _ := os.Executable()
	srv := exec.Command(exe, "__server", filepath.Join(dir, "state"), sock)
	srv.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("server said %q; stderr:\n%s", line, logs.String())
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", srv.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: uint64(len(fds) + 4), Max: uint64(len(fds) + 4)}
	if err := unix.Prlimit(srv.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatal(err)
	}
	c := &Client{Path: sock}
	var conns []net.Conn
	for range 32 {
		conns = append(conns, dialRaw(t, c))
	}
	testwait.Within(t, 30*time.Second, "an accept failure in the server's log", func() bool {
		return strings.Contains(logs.String(), "too many open files")
	})
	select {
	case err := <-exited:
		t.Fatalf("the server exited out of descriptors: %v\n%s", err, logs.String())
	default:
	}
	for _, conn := range conns {
		conn.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if pid, err := c.Ping(ctx); err != nil || pid != srv.Process.Pid {
		t.Fatalf("ping once descriptors freed: %d, %v\n%s", pid, err, logs.String())
	}
}

// runServer is the "__server" part: a registry on args[0] served on the
// socket args[1] with the default limits, logging to stderr, until
// SIGTERM.
func runServer(args []string) int {
	if len(args) != 2 {
		return 2
	}
	env, err := local.New(local.Options{Confine: confine.Off(), BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "GORACE=atexit_sleep_ms=0"}, Grace: local.NoGrace, NoContainment: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exe, _ := os.Executable()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := Open(Options{Dir: args[0], Env: env, Supervisor: []string{exe, "__supervise"}, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer r.Close()
	ln, err := Listen(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Println("ready")
	if err := (&Server{Reg: r}).Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// syncBuffer is a bytes.Buffer safe for a writer and readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
