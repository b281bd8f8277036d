package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestProxy_CloseEndsEverything: Close, with an idle CONNECT tunnel, an
// idle SOCKS5 tunnel, a kept-alive plain-HTTP connection, a half-sent
// header and a question nobody answers, closes every connection on both
// sides, cancels the question and leaves no goroutine behind.
func TestProxy_CloseEndsEverything(t *testing.T) {
	dest, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	destPort := dest.Addr().(*net.TCPAddr).Port
	plain := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	before := goleak.IgnoreCurrent()

	askCancelled := make(chan error, 1)
	asked := make(chan struct{})
	p, err := Start(t.Context(), Options{
		Allow: rules(t, "127.0.0.1"),
		Ask: func(ctx context.Context, host string, port int) (bool, string, error) {
			close(asked)
			<-ctx.Done()
			askCancelled <- ctx.Err()
			return false, "", ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var clients, upstreams []net.Conn
	connect := dialProxy(t, p)
	fmt.Fprintf(connect, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", destPort)
	expectLine(t, connect, "HTTP/1.1 200 Connection established")
	clients = append(clients, connect)
	upstreams = append(upstreams, accept(t, dest))

	_, socks := socksDial(t, p.Addr(), socksConnect, socksAtypIPv4, []byte{127, 0, 0, 1}, destPort)
	if socks == nil {
		t.Fatal("SOCKS5 CONNECT refused")
	}
	clients = append(clients, socks)
	upstreams = append(upstreams, accept(t, dest))

	keep := dialProxy(t, p)
	fmt.Fprintf(keep, "GET %s/ HTTP/1.1\r\nHost: x\r\n\r\n", plain.URL)
	expectLine(t, keep, "HTTP/1.1 200 OK")
	clients = append(clients, keep)

	half := dialProxy(t, p)
	io.WriteString(half, "GET http://127.0.0.1/ HTTP/1.1\r\nHo")
	clients = append(clients, half)

	waiting := dialProxy(t, p)
	io.WriteString(waiting, "CONNECT unlisted.example:443 HTTP/1.1\r\n\r\n")
	<-asked
	clients = append(clients, waiting)

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-askCancelled:
		if err == nil {
			t.Fatal("the question's ctx ended without an error")
		}
	case <-time.After(hang):
		t.Fatal("Close did not cancel the question")
	}
	for i, c := range append(clients, upstreams...) {
		c.SetReadDeadline(time.Now().Add(hang))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("connection %d was not closed by the proxy: %v", i, err)
		}
	}
	// The destination server's side of the forwarded connection ends on
	// its own schedule; only the proxy's goroutines are in question.
	goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("the proxy still accepts connections after Close")
	}
}

// TestProxy_HeaderBounds: a header too large gets 431, and a client that
// stops sending in the middle of a header (HTTP) or of the handshake
// (SOCKS5) is disconnected after HeaderTimeout instead of holding a
// goroutine for ever.
func TestProxy_HeaderBounds(t *testing.T) {
	p := startProxy(t, Options{MaxHeaderBytes: 1024, HeaderTimeout: 100 * time.Millisecond})

	big := dialProxy(t, p)
	fmt.Fprintf(big, "GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 8192))
	expectLine(t, big, "HTTP/1.1 431 Request Header Fields Too Large")

	for _, partial := range []string{"GET http://127.0.0.1/ HTTP/1.1\r\nHo", "\x05\x01"} {
		c := dialProxy(t, p)
		io.WriteString(c, partial)
		c.SetReadDeadline(time.Now().Add(hang))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("after %q the proxy did not hang up: %v", partial, err)
		}
	}
}

// TestProxy_Violations: the cursor returns exactly the refusals since
// it was taken, in order.
func TestProxy_Violations(t *testing.T) {
	p := startProxy(t, Options{})
	refuse := func(port int) {
		if rep, _ := socksDial(t, p.Addr(), socksConnect, socksAtypName, []byte("denied.example"), port); rep != socksNotAllowd {
			t.Fatalf("reply %#x; want %#x", rep, socksNotAllowd)
		}
	}
	if v, cur := p.Violations(0); len(v) != 0 || cur != 0 {
		t.Fatalf("Violations(0) = %v, %d on a new proxy", v, cur)
	}
	refuse(1)
	_, cur := p.Violations(0)
	refuse(2)
	refuse(3)
	v, next := p.Violations(cur)
	if len(v) != 2 || v[0].Port != 2 || v[1].Port != 3 || next != 3 || v[0].Host != "denied.example" {
		t.Fatalf("Violations(%d) = %+v, %d; want ports 2 and 3, cursor 3", cur, v, next)
	}
	if v, again := p.Violations(next); len(v) != 0 || again != next {
		t.Fatalf("Violations(%d) = %+v, %d; want none", next, v, again)
	}
}

func dialProxy(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), hang)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(hang))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectLine reads c's first line byte by byte (leaving the rest
// unread) and fails unless it is want.
func expectLine(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hang))
	defer c.SetReadDeadline(time.Time{})
	line, err := bufio.NewReaderSize(oneByte{c}, 16).ReadString('\n')
	if strings.TrimRight(line, "\r\n") != want {
		t.Fatalf("first line %q, %v; want %q", line, err, want)
	}
}

// oneByte reads one byte at a time, so a bufio.Reader over it never
// takes more than the line it is asked for.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(b []byte) (int, error) { return o.r.Read(b[:min(1, len(b))]) }

// TestProxy_ViolationsBounded: a command that is refused without end
// does not grow the proxy without end; the cursor keeps counting, and a
// cursor older than what is kept gets what is kept.
func TestProxy_ViolationsBounded(t *testing.T) {
	p := startProxy(t, Options{})
	const n = 3 * maxViolations
	for i := range n {
		p.record(&DeniedError{Host: "x.example", Port: i%65535 + 1, Reason: "test"})
	}
	v, cur := p.Violations(0)
	if cur != n || len(v) == 0 || len(v) > maxViolations || v[len(v)-1].Port != (n-1)%65535+1 {
		t.Fatalf("Violations(0) = %d kept, cursor %d; want at most %d kept, cursor %d, the last one last", len(v), cur, maxViolations, n)
	}
	if v, _ := p.Violations(n - 2); len(v) != 2 {
		t.Fatalf("Violations(n-2) = %d; want 2", len(v))
	}
}
