package testproc

import (
	"net"
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
