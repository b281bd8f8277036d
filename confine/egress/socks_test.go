package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// TestSOCKS_Curl: curl with --socks5-hostname (the name travels to the
// proxy, which resolves it) and with ALL_PROXY=socks5h from Env reaches
// an allowed server, and gets "not allowed by ruleset" for another.
func TestSOCKS_Curl(t *testing.T) {
	plain, _ := backend(t)
	port := serverPort(t, plain)
	p := startProxy(t, Options{Allow: rules(t, fmt.Sprintf("localhost:%d", port))})
	url := fmt.Sprintf("http://localhost:%d/socks", port)

	out, stderr, code := run(t, nil, "curl", "-sS", "--socks5-hostname", p.Addr(), url)
	if code != 0 || out != "backend: GET /socks " {
		t.Fatalf("curl --socks5-hostname = %q (exit %d, %s)", out, code, stderr)
	}
	env := map[string]string{"ALL_PROXY": p.Env()["ALL_PROXY"]}
	out, stderr, code = run(t, env, "curl", "-sS", url)
	if code != 0 || out != "backend: GET /socks " {
		t.Fatalf("curl with ALL_PROXY = %q (exit %d, %s)", out, code, stderr)
	}

	// The same server by its address is another destination, not allowed.
	_, stderr, code = run(t, nil, "curl", "-sS", "--socks5-hostname", p.Addr(), plain.URL)
	if code != 97 || !strings.Contains(stderr, "(2)") { // CURLE_PROXY, SOCKS5 reply 2
		t.Fatalf("curl to a denied host: exit %d, %q; want 97, reply (2)", code, stderr)
	}
	if v, _ := p.Violations(0); len(v) != 1 || v[0].Host != "127.0.0.1" || v[0].Port != port {
		t.Fatalf("violations = %+v; want one for 127.0.0.1:%d", v, port)
	}
}

// TestSOCKS_Replies: the reply codes of the protocol, by a hand-made
// client: CONNECT by name and by IPv4 address succeeds and carries
// bytes, a denied destination gets 0x02, UDP ASSOCIATE and BIND 0x07.
func TestSOCKS_Replies(t *testing.T) {
	echo := echoServer(t)
	port := echo.Addr().(*net.TCPAddr).Port
	p := startProxy(t, Options{Allow: rules(t, "localhost", "127.0.0.1")})
	tests := []struct {
		name string
		cmd  byte
		atyp byte
		addr []byte
		port int
		want byte
	}{
		{"connect by name", socksConnect, socksAtypName, []byte("LOCALHOST."), port, socksSucceeded},
		{"connect by address", socksConnect, socksAtypIPv4, []byte{127, 0, 0, 1}, port, socksSucceeded},
		{"name not allowed", socksConnect, socksAtypName, []byte("other.invalid"), port, socksNotAllowd},
		{"address not allowed", socksConnect, socksAtypIPv4, []byte{127, 0, 0, 2}, port, socksNotAllowd},
		{"udp associate", 3, socksAtypIPv4, []byte{127, 0, 0, 1}, port, socksBadCmd},
		{"bind", 2, socksAtypIPv4, []byte{127, 0, 0, 1}, port, socksBadCmd},
		{"bad address type", socksConnect, 9, nil, port, socksBadAtyp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, c := socksDial(t, p.Addr(), tt.cmd, tt.atyp, tt.addr, tt.port)
			if rep != tt.want {
				t.Fatalf("reply = %#x; want %#x", rep, tt.want)
			}
			if c == nil {
				return
			}
			io.WriteString(c, "ping")
			c.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "ping" {
				t.Fatalf("echo through the tunnel = %q, %v; want ping", got, err)
			}
		})
	}
}

// echoServer echoes each connection until its client half-closes.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln
}

// FuzzSOCKSRequest: any bytes a client sends as a SOCKS5 request parse
// to a refusal or to a destination that is an IP literal or a valid
// domain name, never to a panic or a malformed host.
func FuzzSOCKSRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0, 3, 9, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't', 0, 80})
	f.Add([]byte{5, 1, 0, 1, 127, 0, 0, 1, 1, 187})
	f.Add([]byte{5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 22})
	f.Add([]byte{5, 1, 0, 3, 3, '1', '.', '2', 0, 80})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, host, port, rep := socksRequest(bufio.NewReader(bytes.NewReader(b)))
		if rep != socksSucceeded {
			return
		}
		if host != normalizeHost(host) || (!isIPLiteral(host) && checkDomain(host) != nil) || port < 0 || port > 65535 {
			t.Fatalf("socksRequest(%x) = host %q port %d", b, host, port)
		}
	})
}
