package main

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServe_NoTokenOnlyOnLoopback protects the way in for test suites
// that send no bearer token: --insecure-loopback-no-token is refused
// beyond loopback and with --token-file (a usage error), so it can never
// expose a tokenless server to other machines.
func TestServe_NoTokenOnlyOnLoopback(t *testing.T) {
	tokFile := t.TempDir() + "/tok"
	if err := os.WriteFile(tokFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--http", "0.0.0.0:0"},
		{"--http", "192.0.2.1:0"},
		{"--http", ":0"},
		{"--http", "127.0.0.1:0", "--token-file", tokFile},
	} {
		_, errs, code := cli(t, "", map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, append([]string{"serve", "--insecure-loopback-no-token"}, args...)...)
		if code != exitUsage || !strings.Contains(errs, "loopback") {
			t.Errorf("serve --insecure-loopback-no-token %v: exit %d, %q; want 2 and a refusal naming loopback", args, code, errs)
		}
	}
}

// TestServe_NoTokenServesOnLoopback: with the flag on loopback, a client
// without a token is served (the conformance suite's way in), and the
// server says on stderr that no token is checked.
func TestServe_NoTokenServesOnLoopback(t *testing.T) {
	errb, done, ctx, cancel := serveInProcess(t, map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, "--sandbox", "off", "--http", "127.0.0.1:0", "--insecure-loopback-no-token")
	url, printed := servedURL(t, errb, done)
	if !strings.Contains(printed, "no bearer token is checked") {
		t.Errorf("serve did not warn that no token is checked: %s", printed)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: http.DefaultClient}, nil)
	if err != nil {
		t.Fatalf("connect without a token: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list without a token: %v", err)
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve ended with %v", err)
	}
}
