package egress

import (
	"context"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// hang bounds every wait of these tests: it only catches a hang, so it is
// generous enough for a slow, loaded machine.
const hang = 60 * time.Second

// startProxy starts a Proxy closed at the end of the test.
func startProxy(t *testing.T, o Options) *Proxy {
	t.Helper()
	p, err := Start(t.Context(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// rules parses rule strings or fails the test.
func rules(t *testing.T, ss ...string) []Rule {
	t.Helper()
	rs, err := ParseRules(ss)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// backend is a loopback HTTP server that answers "backend: METHOD PATH"
// followed by the request body, and a TLS one that answers the same.
func backend(t *testing.T) (plain, tls *httptest.Server) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "backend: %s %s %s", r.Method, r.URL.Path, body)
	})
	plain, tls = httptest.NewServer(h), httptest.NewTLSServer(h)
	t.Cleanup(plain.Close)
	t.Cleanup(tls.Close)
	return plain, tls
}

// serverPort is the port of an httptest server.
func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	u, _ := url.Parse(s.URL)
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// writeCA writes the TLS server's certificate where curl can trust it.
func writeCA(t *testing.T, s *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs a real program with the proxy's environment (and nothing
// else but PATH and HOME), returning its stdout, stderr and exit code.
func run(t *testing.T, env map[string]string, name string, args ...string) (string, string, int) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		integration.Skip(t, "%s is not installed: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", name, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// dnsServer is a real DNS server on loopback UDP that answers A queries
// for its names; every other name is NXDOMAIN and AAAA answers are
// empty. A Resolver pointed at it lets the tests give loopback servers
// domain names, as a registry's would be.
type dnsServer struct {
	conn  net.PacketConn
	names map[string][4]byte // "name." -> IPv4
	wg    sync.WaitGroup
}

func startDNS(t *testing.T, names map[string][4]byte) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, names: names}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { conn.Close(); s.wg.Wait() })
	addr := conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func (s *dnsServer) serve() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply := s.answer(buf[:n]); reply != nil {
			s.conn.WriteTo(reply, from)
		}
	}
}

// answer builds the reply to one query (RFC 1035 section 4).
func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	var name strings.Builder
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		name.Write(q[i+1 : i+1+l])
		name.WriteByte('.')
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	ip, known := s.names[strings.ToLower(name.String())]
	flags, answers := uint16(0x8580), uint16(0) // response, authoritative, recursion
	switch {
	case !known:
		flags |= 3 // NXDOMAIN
	case qtype == 1:
		answers = 1
	}
	r := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q))
	r = binary.BigEndian.AppendUint16(r, flags)
	r = append(r, 0, 1, byte(answers>>8), byte(answers), 0, 0, 0, 0)
	r = append(r, question...)
	if answers == 1 {
		r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		r = append(r, ip[:]...)
	}
	return r
}

// socksDial performs a SOCKS5 handshake by hand and returns the reply
// code, and the connection when it succeeded.
func socksDial(t *testing.T, proxy string, cmd, atyp byte, addr []byte, port int) (byte, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, hang)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(hang))
	req := []byte{5, 1, 0, 5, cmd, 0, atyp}
	if atyp == socksAtypName {
		req = append(req, byte(len(addr)))
	}
	req = append(req, addr...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		t.Fatalf("SOCKS5 greeting reply = %v, %v; want [5 0]", greet, err)
	}
	reply := make([]byte, 10)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("reading the SOCKS5 reply: %v", err)
	}
	if reply[1] != 0 {
		c.Close()
		return reply[1], nil
	}
	c.SetDeadline(time.Time{})
	t.Cleanup(func() { c.Close() })
	return 0, c
}

// newServer is an httptest server closed at the end of the test.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
