package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServe_Stdio drives `runbox serve` over its stdin and stdout with
// the SDK's client: a command runs in the session, a background job runs
// in the per-user job daemon and its completion arrives as a log
// notification, and closing stdin ends the server and the session.
func TestServe_Stdio(t *testing.T) {
	env := jobsEnv(t)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb strings.Builder
	a := newApp(inR, outW, &lockedWriter{w: &errb}, getenv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := a.execute(ctx, []string{"serve"})
		outW.Close()
		done <- err
	}()

	var mu sync.Mutex
	var notices []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params.Data)
			mu.Lock()
			notices = append(notices, string(b))
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errb.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo from-serve"}})
	if err != nil || res.IsError {
		t.Fatalf("terminal: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"output":"from-serve\n"`) {
		t.Errorf("result = %s", b)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo bg", "background": true, "notify_on_complete": true}})
	if err != nil || res.IsError {
		t.Fatalf("background terminal: %v %+v", err, res)
	}
	var started struct {
		SessionID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &started)
	want := "[background job " + started.SessionID + " completed: exit 0]"
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(notices, "\n")
		mu.Unlock()
		if strings.Contains(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completion notice %q; got %s\nstderr: %s", want, got, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs.Close()
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve ended with %v\n%s", err, errb.String())
		}
	case <-ctx.Done():
		t.Fatal("serve did not end when its stdin closed")
	}
}

// lockedWriter serialises writes from the server's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveGetenv is the environment of an in-process `runbox serve`: env
// first, and none of the developer's own configuration.
func serveGetenv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
}

// servedAddress waits for an in-process `runbox serve --http` to print its
// address and its token file; serve ending first (done) fails the test.
func servedAddress(t *testing.T, errb *lockedWriter, done <-chan error) (url, tokFile string) {
	t.Helper()
	m, _ := servedLine(t, errb, done, `(?s)serving MCP at (http://\S+).*bearer token written to (\S+)|(?s)bearer token written to (\S+).*serving MCP at (http://\S+)`)
	if m[1] != "" {
		return m[1], m[2]
	}
	return m[4], m[3]
}

// servedURL waits for an in-process `runbox serve --http` to print its
// address, and returns it with all serve printed so far.
func servedURL(t *testing.T, errb *lockedWriter, done <-chan error) (url, printed string) {
	t.Helper()
	m, s := servedLine(t, errb, done, `serving MCP at (http://\S+)`)
	return m[1], s
}

// serveInProcess starts `runbox serve args...` in this process with env;
// it returns what serve prints on stderr, its end, and the context it runs
// under with the cancel that stops it (also called at the test's end).
func serveInProcess(t *testing.T, env map[string]string, args ...string) (*lockedWriter, <-chan error, context.Context, context.CancelFunc) {
	t.Helper()
	errb := &lockedWriter{w: &strings.Builder{}}
	a := newApp(strings.NewReader(""), io.Discard, errb, serveGetenv(env))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- a.execute(ctx, append([]string{"serve"}, args...)) }()
	return errb, done, ctx, cancel
}

// servedLine waits (up to a bound that catches a hang) for what an
// in-process serve prints to match expr, and returns the submatches and
// the whole text; serve ending first (done) fails the test.
func servedLine(t *testing.T, errb *lockedWriter, done <-chan error, expr string) ([]string, string) {
	t.Helper()
	re := regexp.MustCompile(expr)
	deadline := time.Now().Add(60 * time.Second)
	for {
		errb.mu.Lock()
		s := errb.w.(*strings.Builder).String()
		errb.mu.Unlock()
		if m := re.FindStringSubmatch(s); m != nil {
			return m, s
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no address: %s", s)
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, s)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestServe_HTTPGeneratedToken: `runbox serve --http` on loopback
// generates a token into a 0600 file whose path it prints, refuses
// requests without it, serves a client that has it, and removes the file
// when it stops.
func TestServe_HTTPGeneratedToken(t *testing.T) {
	errb, done, ctx, cancel := serveInProcess(t, map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, "--http", "127.0.0.1:0")
	url, tokFile := servedAddress(t, errb, done)
	fi, err := os.Stat(tokFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v, %v; want mode 0600", tokFile, fi, err)
	}
	tok, _ := os.ReadFile(tokFile)

	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("request without the token: %d; want 401", resp.StatusCode)
	}

	hc := bearerClient(strings.TrimSpace(string(tok)))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo over-http"}})
	if err != nil || res.IsError {
		t.Fatalf("terminal over HTTP: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve ended with %v", err)
	}
	if _, err := os.Stat(tokFile); !os.IsNotExist(err) {
		t.Errorf("the generated token file is still there after the server stopped")
	}
}

// TestServe_RefusesExposure: beyond loopback without --token-file,
// serve refuses to listen (a usage error, exit 2).
func TestServe_RefusesExposure(t *testing.T) {
	_, errs, code := cli(t, "", map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, "serve", "--http", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errs, "--token-file") {
		t.Errorf("serve --http 0.0.0.0:0: exit %d, %q; want 2 and a hint about --token-file", code, errs)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestServe_TokenFileUnreadableByCommands: a token file the user gives
// (--token-file), wherever it is, joins the deny list of the server's
// commands: it opens every session of the server, and a command that
// read it could reach the server on loopback. The control: the same
// file is readable here, outside the sandbox.
func TestServe_TokenFileUnreadableByCommands(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "serve.token")
	if err := os.WriteFile(tokFile, []byte("token-canary-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	errb, done, ctx, _ := serveInProcess(t, map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, "--http", "127.0.0.1:0", "--token-file", tokFile, "--cwd", dir)
	url, _ := servedURL(t, errb, done)
	if b, err := os.ReadFile(tokFile); err != nil || !strings.Contains(string(b), "token-canary") {
		t.Fatalf("the control read %q, %v", b, err)
	}
	hc := bearerClient("token-canary-0123456789abcdef")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	defer cs.Close()
	// In a script, which the gate does not read: the kernel must hold.
	if err := os.WriteFile(filepath.Join(dir, "read.sh"), []byte("cat "+tokFile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "sh read.sh; echo done"}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !strings.Contains(text.String(), "done") {
		t.Fatalf("the command did not run: %s", text.String())
	}
	if strings.Contains(text.String(), "token-canary") {
		t.Errorf("a command of the server read its token file: %s", text.String())
	}
}
