package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// serveHTTP serves srv's HTTP transport on ln until the test ends.
func serveHTTP(t *testing.T, srv *server.Server, ln net.Listener, opts server.HTTPOptions) {
	t.Helper()
	hs := &http.Server{Handler: srv.HTTPHandler(opts)}
	var wg sync.WaitGroup
	wg.Go(func() { hs.Serve(ln) })
	t.Cleanup(func() {
		srv.Close() // ends the sessions, and with them their streams
		hs.Close()
		wg.Wait()
	})
}

// serveURL serves srv over HTTP on a loopback port of its own until the
// test ends, and returns the MCP endpoint's URL.
func serveURL(t *testing.T, srv *server.Server, opts server.HTTPOptions) string {
	t.Helper()
	ln, err := server.ListenTCP("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	serveHTTP(t, srv, ln, opts)
	return "http://" + ln.Addr().String() + server.Path
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connectHTTP opens a client session over the streamable transport.
func connectHTTP(t *testing.T, endpoint string, hc *http.Client, noStream bool, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: noStream}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTP_Refusals protects the transport's guards: over TCP, no token,
// a wrong token, a foreign Origin or a foreign Host is refused before
// the MCP layer sees the request.
func TestHTTP_Refusals(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{Token: "s3cret"})
	for _, tc := range []struct {
		name    string
		headers map[string]string
		host    string
		want    int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
		{"not a bearer", map[string]string{"Authorization": "Basic czNjcmV0"}, "", http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}, "", http.StatusForbidden},
		{"foreign host", map[string]string{"Authorization": "Bearer s3cret"}, "evil.example", http.StatusForbidden},
		{"token and local origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:3000"}, "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(initializeBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d; want %d", resp.StatusCode, tc.want)
			}
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				// Close the session the accepted request opened.
				del, _ := http.NewRequestWithContext(t.Context(), "DELETE", url, nil)
				del.Header.Set("Authorization", "Bearer s3cret")
				del.Header.Set("Mcp-Session-Id", sid)
				if r, err := http.DefaultClient.Do(del); err == nil {
					r.Body.Close()
				}
			}
		})
	}
}

// TestHTTP_ClientWithToken: a client with the token runs commands in a
// session of its own and receives its job's completion on its stream.
func TestHTTP_ClientWithToken(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{Token: "s3cret"})
	hc := &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}
	n := &notices{}
	cs := connectHTTP(t, url, hc, false, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	mustOK(t, cs, "terminal", map[string]any{"command": "export RB_H=over-http"})
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo $RB_H"})
	if strings.TrimSpace(out["output"].(string)) != "over-http" {
		t.Errorf("output = %q", out["output"])
	}
	job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo done", "background": true, "notify_on_complete": true})
	id := job["session_id"].(string)
	testwait.Until(t, "the completion notice over HTTP", func() bool { return len(n.of(id, "completion")) > 0 })
	if got := len(n.of(id, "completion")); got != 1 {
		t.Errorf("completion notices = %d; want 1", got)
	}
}

// TestHTTP_UndeliveredEventsInList: a client with no stream open cannot
// be notified; the event stays queued and the next list returns it,
// once.
func TestHTTP_UndeliveredEventsInList(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{Token: "s3cret"})
	hc := &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}
	n := &notices{}
	cs := connectHTTP(t, url, hc, true, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo bye", "background": true, "notify_on_complete": true})
	id := job["session_id"].(string)
	mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 30})
	var found bool
	testwait.Until(t, "the completion in list", func() bool {
		list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
		evs, _ := list["events"].([]any)
		for _, ev := range evs {
			if m := ev.(map[string]any); m["job"] == id && m["type"] == "completion" {
				found = true
			}
		}
		return found
	})
	list, _ := mustOK(t, cs, "process", map[string]any{"action": "list"})
	if evs, _ := list["events"].([]any); len(evs) != 0 {
		t.Errorf("second list returned events again: %v", evs)
	}
	if len(n.of(id, "completion")) != 0 {
		t.Errorf("a client without a stream was notified")
	}
}

// TestUnixSocket_OwnerOnly: over a Unix socket no token is needed, and a
// connection from another user is closed unanswered even when the
// socket's permissions would let it in.
func TestUnixSocket_OwnerOnly(t *testing.T) {
	srv, _ := newServer(t, nil)
	dir, err := os.MkdirTemp("", "rbu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mcp.sock")
	ln, err := server.ListenUnix(sock, filepath.Join(dir, "private"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	serveHTTP(t, srv, ln, server.HTTPOptions{AnyHost: true})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	cs := connectHTTP(t, "http://localhost"+server.Path, hc, false, nil)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo via-socket"})
	if strings.TrimSpace(out["output"].(string)) != "via-socket" {
		t.Errorf("output = %q", out["output"])
	}

	curl, err := exec.LookPath("curl")
	if err != nil || os.Getuid() != 0 {
		integration.Skip(t, "the foreign-user check needs root and curl")
	}
	os.Chmod(dir, 0o755)
	os.Chmod(sock, 0o666) // a mistake the peer check must still cover
	run := func(uid uint32) (int, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock,
			"-X", "POST", "-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
			"--data", initializeBody, "http://localhost"+server.Path)
		if uid != 0 {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		b, err := c.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(b)
		}
		return 0, string(b)
	}
	if code, status := run(0); code != 0 || status != "200" {
		t.Fatalf("curl as the owner: exit %d, status %s; want 200", code, status)
	}
	if code, status := run(65534); code == 0 || status != "000" {
		t.Errorf("curl as another user: exit %d, status %s; want no answer", code, status)
	}
}

// TestListenTCP_RefusesExposure: beyond loopback a provisioned token is
// required.
func TestListenTCP_RefusesExposure(t *testing.T) {
	if _, err := server.ListenTCP("0.0.0.0:0", false); !errors.Is(err, server.ErrExposed) {
		t.Errorf("ListenTCP(0.0.0.0, generated token) = %v; want ErrExposed", err)
	}
	ln, err := server.ListenTCP("127.0.0.1:0", false)
	if err != nil {
		t.Fatalf("ListenTCP(127.0.0.1) = %v", err)
	}
	ln.Close()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:1": true, "[::1]:2": true, "127.9.9.9:3": true,
		":8080": false, "0.0.0.0:8080": false, "192.168.1.5:80": false, "example.com:80": false,
	} {
		if got := server.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v; want %v", addr, got, want)
		}
	}
}

// TestToken_Files: a generated token is written 0600 and read back; a
// token file others can read is refused.
func TestToken_Files(t *testing.T) {
	dir := t.TempDir()
	tok, path, err := server.NewToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || len(tok) < 32 {
		t.Fatalf("NewToken: %s mode %v, token %d chars, %v", path, fi.Mode().Perm(), len(tok), err)
	}
	if got, err := server.ReadToken(path); err != nil || got != tok {
		t.Errorf("ReadToken = %q, %v; want the token", got, err)
	}
	open := filepath.Join(dir, "open.token")
	os.WriteFile(open, []byte("x\n"), 0o644)
	if _, err := server.ReadToken(open); err == nil {
		t.Errorf("ReadToken of a 0644 file succeeded")
	}
}
