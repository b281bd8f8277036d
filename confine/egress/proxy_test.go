package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestProxy_CurlThroughEnv: curl, given only Env, reaches an allowed
// loopback server over plain HTTP (absolute URI) and HTTPS (CONNECT),
// and gets the readable 403 for a server that is not allowed — which
// also proves curl went through the proxy rather than around it.
func TestProxy_CurlThroughEnv(t *testing.T) {
	plain, tlsSrv := backend(t)
	ca := writeCA(t, tlsSrv)
	allowed := rules(t, fmt.Sprintf("127.0.0.1:%d", serverPort(t, plain)), fmt.Sprintf("127.0.0.1:%d", serverPort(t, tlsSrv)))
	tests := []struct {
		name  string
		allow []Rule
		url   string
		want  string // stdout
		code  int    // curl's exit code
	}{
		{"http allowed", allowed, plain.URL + "/simple", "backend: GET /simple ", 0},
		{"https allowed", allowed, tlsSrv.URL + "/secure", "backend: GET /secure ", 0},
		{"http denied", nil, plain.URL + "/x", "runbox sandbox: egress to 127.0.0.1:", 0},
		{"https denied", nil, tlsSrv.URL + "/x", "", 56}, // CURLE_RECV_ERROR: the CONNECT got 403
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, Options{Allow: tt.allow})
			out, stderr, code := run(t, p.Env(), "curl", "-sS", "--cacert", ca, tt.url)
			if code != tt.code || !strings.HasPrefix(out, tt.want) {
				t.Fatalf("curl %s = %q (exit %d, stderr %q); want prefix %q, exit %d", tt.url, out, code, stderr, tt.want, tt.code)
			}
			v, _ := p.Violations(0)
			if denied := tt.allow == nil; denied != (len(v) == 1) {
				t.Fatalf("violations = %+v; want one exactly when denied", v)
			}
			if tt.allow == nil && (v[0].Host != "127.0.0.1" || !strings.Contains(v[0].Reason, "not on the allow-list")) {
				t.Fatalf("violation = %+v; want 127.0.0.1, not on the allow-list", v[0])
			}
		})
	}
}

// TestProxy_DeniedBody: the 403 body says which destination was refused
// and how to allow it, so an agent can act on it.
func TestProxy_DeniedBody(t *testing.T) {
	plain, _ := backend(t)
	p := startProxy(t, Options{})
	out, _, code := run(t, p.Env(), "curl", "-sS", "-w", "\n%{http_code}", plain.URL+"/")
	want := fmt.Sprintf("runbox sandbox: egress to 127.0.0.1:%d denied: not on the allow-list; add it under sandbox.network.allow\n\n403", serverPort(t, plain))
	if code != 0 || out != want {
		t.Fatalf("curl = %q (exit %d); want %q", out, code, want)
	}
}

// TestProxy_GoClient: Go's net/http, through the proxy, over CONNECT and
// absolute URIs, with bodies (sized and chunked) and several requests
// on one kept-alive client connection.
func TestProxy_GoClient(t *testing.T) {
	plain, tlsSrv := backend(t)
	p := startProxy(t, Options{Allow: rules(t, "127.0.0.1")})
	proxyURL, _ := url.Parse("http://" + p.Addr())
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, base := range []string{plain.URL, tlsSrv.URL} {
		for i := range 3 {
			var body io.Reader = strings.NewReader("sized")
			if i == 2 {
				body = io.MultiReader(strings.NewReader("chun"), strings.NewReader("ked")) // unknown length: chunked
			}
			resp, err := client.Post(base+"/post", "text/plain", body)
			if err != nil {
				t.Fatalf("POST %s: %v", base, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "backend: POST /post sized"
			if i == 2 {
				want = "backend: POST /post chunked"
			}
			if resp.StatusCode != 200 || string(got) != want {
				t.Fatalf("POST %s #%d = %d %q; want 200 %q", base, i, resp.StatusCode, got, want)
			}
		}
	}
	if v, _ := p.Violations(0); len(v) != 0 {
		t.Fatalf("violations = %+v; want none", v)
	}
}

// TestProxy_HopHeaders: hop-by-hop headers, and those Connection names,
// do not reach the destination; end-to-end headers do; the Host header
// names the destination that was decided on, not another virtual host.
func TestProxy_HopHeaders(t *testing.T) {
	seen := make(chan http.Header, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Seen-Host", r.Host)
		seen <- h
	}))
	p := startProxy(t, Options{Allow: rules(t, "127.0.0.1")})
	_, stderr, code := run(t, p.Env(), "curl", "-sS", "-H", "Connection: X-Secret", "-H", "X-Secret: 1",
		"-H", "Proxy-Authorization: Basic eA==", "-H", "X-Kept: yes", "-H", "Host: other.example", srv.URL)
	if code != 0 {
		t.Fatalf("curl exit %d: %s", code, stderr)
	}
	h := <-seen
	for _, name := range []string{"X-Secret", "Proxy-Authorization", "Proxy-Connection", "Connection"} {
		if h.Get(name) != "" {
			t.Errorf("destination got %s: %q", name, h.Get(name))
		}
	}
	if want := strings.TrimPrefix(srv.URL, "http://"); h.Get("X-Seen-Host") != want {
		t.Errorf("destination got Host %q; want %q", h.Get("X-Seen-Host"), want)
	}
	if h.Get("X-Kept") != "yes" {
		t.Errorf("destination lost X-Kept: %v", h)
	}
}

// TestProxy_KeptConnectionClosedByDestination: a destination that closes
// each connection after one response without announcing it (as servers
// with short idle timeouts do) does not fail the client's next request
// on the same client connection: the proxy sends it again on a new one.
func TestProxy_KeptConnectionClosedByDestination(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n%d", n)
			}
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()
	p := startProxy(t, Options{Allow: rules(t, "127.0.0.1")})
	c := dialProxy(t, p)
	c.SetDeadline(time.Now().Add(hang))
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr(), i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || len(body) != 1 {
			t.Fatalf("request %d = %d %q; want 200 and one digit", i, resp.StatusCode, body)
		}
	}
}
