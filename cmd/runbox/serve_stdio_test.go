package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// stdioPeer is a raw client of a real `runbox serve` process: lines in
// on its stdin, lines out of its stdout.
type stdioPeer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startServe(t *testing.T, args ...string) *stdioPeer {
	t.Helper()
	env := jobsEnv(t)
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG=", "HOME="+cmd.Dir,
		"RUNBOX_STATE_DIR="+env["RUNBOX_STATE_DIR"], "RUNBOX_OWNER="+env["RUNBOX_OWNER"])
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &lockedWriter{w: &errb}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &stdioPeer{t: t, cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("runbox serve's stderr:\n%s", errb.String())
		}
	})
	return p
}

func (p *stdioPeer) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.t.Fatalf("write %s: %v", l, err)
		}
	}
}

// stdioReply is one JSON-RPC response as it came.
type stdioReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

// next returns the next response (notifications skipped); ok is false
// when the server's stdout ended.
func (p *stdioPeer) next() (stdioReply, bool) {
	p.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, open := <-p.lines:
			if !open {
				return stdioReply{}, false
			}
			var r stdioReply
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				p.t.Fatalf("runbox wrote a line that is not JSON: %q", l)
			}
			if r.Method == "" {
				return r, true
			}
		case <-timeout:
			p.t.Fatal("no reply from runbox serve")
		}
	}
}

func toolCall(id int, command string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "terminal", "arguments": map[string]any{"command": command}}})
	return string(b)
}

// TestServe_StdioMalformedMessages protects the stdio server from one bad
// line: broken JSON, "jsonrpc":"1.0" and a batch each get the JSON-RPC
// error the spec names, and the session's shell (its cd and export)
// survives them. It used to exit 125 at the first, unanswered, with every
// shell torn down. The input then ends right after a request: its reply
// still comes before runbox exits.
func TestServe_StdioMalformedMessages(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r, ok := p.next(); !ok || r.Error != nil || string(r.ID) != "1" {
		t.Fatalf("initialize: %+v", r)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, toolCall(2, "cd / && export KEPT=yes"))
	if r, ok := p.next(); !ok || r.Error != nil || string(r.ID) != "2" {
		t.Fatalf("cd and export: %+v", r)
	}
	bad := []struct {
		name, line, id string
		code           int64
	}{
		{"broken JSON", `{"jsonrpc":"2.0","id":3,"method":`, "null", -32700},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":4,"method":"ping"}`, "4", -32600},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, "null", -32600},
		{"not an object", `42`, "null", -32600},
		{"method not a string", `{"jsonrpc":"2.0","id":6,"method":7}`, "6", -32600},
	}
	for _, b := range bad {
		p.send(b.line)
		r, ok := p.next()
		if !ok {
			t.Fatalf("%s: runbox serve ended", b.name)
		}
		if r.Error == nil || r.Error.Code != b.code || string(r.ID) != b.id {
			t.Errorf("%s: %+v; want error %d with id %s", b.name, r, b.code, b.id)
		}
	}
	p.send(toolCall(9, "pwd; echo $KEPT"))
	p.in.Close() // the input ends right after the request
	r, ok := p.next()
	if !ok || r.Error != nil || string(r.ID) != "9" {
		t.Fatalf("the call after the bad lines: %+v (ok %v)", r, ok)
	}
	if !strings.Contains(string(r.Result), `/\nyes\n`) {
		t.Errorf("the session's state did not survive: %s", r.Result)
	}
	if _, ok := p.next(); ok {
		t.Error("runbox wrote more after the last stdioReply")
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Errorf("runbox serve exited %v after its input ended", err)
	}
}

// TestServe_HelpListsEveryTool protects `runbox serve --help`: every tool
// the server offers (asked of a real server over stdio, with --sync so
// that sync is among them) is named in it.
func TestServe_HelpListsEveryTool(t *testing.T) {
	help, _, code := cli(t, "", nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	p := startServe(t, "--sandbox", "off", "--sync", t.TempDir(), "--task", "helptest", "--backend", "docker")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	for {
		r, ok := p.next()
		if !ok {
			t.Fatal("runbox serve ended before listing its tools")
		}
		if string(r.ID) == "2" {
			if r.Error != nil || json.Unmarshal(r.Result, &tools) != nil {
				t.Fatalf("tools/list: %+v", r)
			}
			break
		}
	}
	if len(tools.Tools) < 5 {
		t.Errorf("the server offered %d tools; want sync among them too: %+v", len(tools.Tools), tools.Tools)
	}
	for _, tool := range tools.Tools {
		if !strings.Contains(help, "\n  "+tool.Name+" ") {
			t.Errorf("serve --help does not list the tool %s", tool.Name)
		}
	}
}

// TestServe_StdioCancelledThenEOF: a request the client cancelled may go
// unanswered, so the end of input right after the cancellation must not
// wait for it: runbox exits, and the cancelled command dies with the
// session.
func TestServe_StdioCancelledThenEOF(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r, ok := p.next(); !ok || r.Error != nil {
		t.Fatalf("initialize: %+v", r)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, toolCall(2, "sleep 3600"),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	p.in.Close()
	exited := make(chan error, 1)
	go func() {
		for range p.lines {
		}
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("runbox serve exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("runbox serve still waits for a cancelled request after its input ended")
	}
}
