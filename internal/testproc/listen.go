package testproc

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// Greeting is what ServeUnix writes to each connection.
const Greeting = "HELLO"

// ServeUnix accepts connections on the unix socket at addr (a path, or
// "@name" in the abstract namespace) until the test ends, writing
// Greeting to each: a daemon that answers whoever reaches it.
func ServeUnix(t testing.TB, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptAll(ln, func(c net.Conn) { c.Write([]byte(Greeting)) })
}

// AcceptTCP accepts TCP connections on every IPv4 address of this host
// until the test ends, closing each, and returns its port.
func AcceptTCP(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptAll(ln, func(net.Conn) {})
	return ln.Addr().(*net.TCPAddr).Port
}

// acceptAll serves ln with serve, closing each connection after it, until
// ln is closed.
func acceptAll(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		serve(c)
		c.Close()
	}
}

// NonLoopbackIPv4 is an IPv4 address of this host that is not loopback;
// without one the test is skipped (a failure where integration tests
// must run).
func NonLoopbackIPv4(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	integration.Skip(t, "no IPv4 address but loopback")
	return ""
}

// DaemonSocket is a path for a daemon's socket in a fresh directory any
// user may enter, outside every directory a test's command may write, as
// a container engine's or journald's is; the directory goes when the
// test ends. The caller makes the socket and opens it to everyone.
func DaemonSocket(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "runbox-daemon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	return filepath.Join(dir, name)
}

// Datagrams is a unix datagram socket that anyone may send to, as
// journald's and syslog's are.
type Datagrams struct {
	Path string
	fd   int // non-blocking: Count takes what is queued
}

// ServeDatagrams binds a datagram socket at a DaemonSocket path until the
// test ends.
func ServeDatagrams(t testing.TB) *Datagrams {
	t.Helper()
	d := &Datagrams{Path: DaemonSocket(t, "log.sock")}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: d.Path}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d.Path, 0o777)
	d.fd = fd
	return d
}

// Count takes the datagrams that arrived since the last Count and says
// how many hold word. A datagram is queued before its send returns, so
// once a sender has exited every one it sent is here: nothing to wait for.
func (d *Datagrams) Count(word string) int {
	n := 0
	buf := make([]byte, 4096)
	for {
		k, _, err := syscall.Recvfrom(d.fd, buf, 0)
		if err != nil {
			return n // EAGAIN: nothing more is queued
		}
		if strings.Contains(string(buf[:k]), word) {
			n++
		}
	}
}
