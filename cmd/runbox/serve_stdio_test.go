package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
)

// stdioPeer is a raw client of a real `runbox serve` process: lines in
// on its stdin, lines out of its stdout.
type stdioPeer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   io.ReadCloser // runbox's stdout, read into lines
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
	p := &stdioPeer{t: t, cmd: cmd, in: in, out: out, lines: make(chan string, 64)}
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

// initialize opens the MCP session of a raw stdio peer.
func (p *stdioPeer) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r, ok := p.next(); !ok || r.Error != nil || string(r.ID) != `"init"` {
		p.t.Fatalf("initialize: %+v", r)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// ping sends a ping with id and fails unless it is answered.
func (p *stdioPeer) ping(id string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}`)
	r, ok := p.next()
	if !ok || r.Error != nil || string(r.ID) != `"`+id+`"` {
		p.t.Fatalf("ping %s: %+v (runbox still serving: %v)", id, r, ok)
	}
}

// TestServe_StdioLongLines protects the stdio server from a long line:
// every size is answered (up to the server's 64 MiB) or refused with
// -32700, and the server goes on. A line between the SDK's 16 MiB and
// the server's 64 MiB used to end runbox (exit 125, "inbound JSON-RPC
// frame exceeded the configured maximum line length").
func TestServe_StdioLongLines(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.initialize()
	line := func(id string, size int) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", size) + `"}}}`
	}
	p.send(line("20MiB", 20<<20))
	if r, ok := p.next(); !ok || r.Error != nil || string(r.ID) != `"20MiB"` {
		t.Fatalf("a 20 MiB line: %+v (runbox still serving: %v)", r, ok)
	}
	p.ping("after-20MiB")
	p.send(line("70MiB", 70<<20))
	if r, ok := p.next(); !ok || r.Error == nil || r.Error.Code != -32700 {
		t.Fatalf("a 70 MiB line: %+v (runbox still serving: %v); want a -32700 parse error", r, ok)
	}
	p.ping("after-70MiB")
}

// TestServe_StdioClientGone: a client that dies with a command in flight
// (its pipes closed at once, as the kernel closes them) ends its session:
// the foreground command and the session's background job, found by a
// marker in their argv, are gone within a generous bound, and runbox
// exits 0 (it used to wait for the command without bound, then die of
// SIGPIPE writing its reply, skipping the teardown).
func TestServe_StdioClientGone(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.initialize()
	marker := "runbox-gone-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p.send(`{"jsonrpc":"2.0","id":"bg","method":"tools/call","params":{"name":"terminal","arguments":{"command":"(exec -a ` + marker + `-bg sleep 3600)","background":true}}}`)
	if r, ok := p.next(); !ok || r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("background job: %+v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":"fg","method":"tools/call","params":{"name":"terminal","arguments":{"command":"(exec -a ` + marker + `-fg sleep 3600)"}}}`)
	testwait.Within(t, 60*time.Second, "both commands running", func() bool { return len(markedProcesses(marker)) == 2 })

	p.in.Close() // the client dies: both its pipe ends close
	p.out.Close()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if st := p.cmd.ProcessState; err != nil || st.ExitCode() != 0 {
			t.Errorf("runbox serve exited with %v (%v); want 0", err, st)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("runbox serve still runs a minute after its client died")
	}
	testwait.Within(t, 60*time.Second, "the session's processes gone", func() bool { return len(markedProcesses(marker)) == 0 })
}

// markedProcesses lists the processes whose argv[0] starts with marker
// (commands run as `exec -a MARKER…`).
func markedProcesses(marker string) []string {
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(b), marker) {
			found = append(found, d.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestServe_StdioCancelledNotAnswered: a request the client cancelled
// (notifications/cancelled) gets no response, as the protocol says; its
// command is stopped, and the session goes on.
func TestServe_StdioCancelledNotAnswered(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.initialize()
	marker := "runbox-cancel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"terminal","arguments":{"command":"(exec -a ` + marker + ` sleep 3600)"}}}`)
	testwait.Within(t, 60*time.Second, "the command running", func() bool { return len(markedProcesses(marker)) == 1 })
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"changed my mind"}}`)
	testwait.Within(t, 60*time.Second, "the cancelled command stopped", func() bool { return len(markedProcesses(marker)) == 0 })
	p.send(toolCall(7, "echo still-here"))
	deadline := time.After(3 * time.Second) // after the call's answer, for a late one
	seen := false
	for {
		select {
		case l, open := <-p.lines:
			if !open {
				t.Fatal("runbox serve ended")
			}
			var r stdioReply
			json.Unmarshal([]byte(l), &r)
			if string(r.ID) == `"slow"` {
				t.Fatalf("the cancelled request was answered: %s", l)
			}
			if string(r.ID) == "7" {
				if !strings.Contains(string(r.Result), "still-here") {
					t.Fatalf("the call after the cancellation: %s", l)
				}
				seen = true
			}
		case <-deadline:
			if !seen {
				t.Fatal("no answer to the call after the cancellation")
			}
			return
		}
	}
}

// TestServe_StdioLevelKeepsNotices: a client that raises its log level
// above a job's completion notice (logging/setLevel error) does not
// lose it: lowered again, the level lets the notice through, once; and
// a notice held at a high level is returned by process list instead,
// and never sent after.
func TestServe_StdioLevelKeepsNotices(t *testing.T) {
	p := startServe(t, "--sandbox", "off")
	p.initialize()
	var got []string // every notification so far
	// request sends a request and returns its result, keeping the
	// notifications that come before it.
	request := func(id, method string, params any) string {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		p.send(string(b))
		for {
			select {
			case l, open := <-p.lines:
				if !open {
					t.Fatalf("runbox serve ended during %s", id)
				}
				var r stdioReply
				json.Unmarshal([]byte(l), &r)
				if r.Method != "" {
					got = append(got, l)
					continue
				}
				if string(r.ID) != `"`+id+`"` || r.Error != nil {
					t.Fatalf("%s: %s", id, l)
				}
				return string(r.Result)
			case <-time.After(60 * time.Second):
				t.Fatalf("no answer to %s", id)
			}
		}
	}
	setLevel := func(id, level string) { request(id, "logging/setLevel", map[string]any{"level": level}) }
	call := func(id, tool string, args map[string]any) string {
		return request(id, "tools/call", map[string]any{"name": tool, "arguments": args})
	}
	// drain keeps the notifications that came meanwhile.
	drain := func() {
		for {
			select {
			case l := <-p.lines:
				got = append(got, l)
			default:
				return
			}
		}
	}
	jobID := func(res string) string {
		var m struct {
			Structured struct {
				ID string `json:"session_id"`
			} `json:"structuredContent"`
		}
		json.Unmarshal([]byte(res), &m)
		if m.Structured.ID == "" {
			t.Fatalf("no job id in %s", res)
		}
		return m.Structured.ID
	}
	completions := func(lines []string, id string) int {
		return strings.Count(strings.Join(lines, "\n"), "[background job "+id+" completed")
	}
	setLevel("l1", "error")
	first := jobID(call("j1", "terminal", map[string]any{"command": "echo one", "background": true, "notify_on_complete": true}))
	call("w1", "process", map[string]any{"action": "wait", "session_id": first})
	time.Sleep(time.Second) // the completion reaches the session, and is held
	drain()
	if c := completions(got, first); c != 0 {
		t.Fatalf("a completion notice was sent at level error: %v", got)
	}
	setLevel("l2", "info")
	testwait.Within(t, 60*time.Second, "the held completion notice", func() bool { drain(); return completions(got, first) > 0 })

	setLevel("l3", "error")
	second := jobID(call("j2", "terminal", map[string]any{"command": "echo two", "background": true, "notify_on_complete": true}))
	call("w2", "process", map[string]any{"action": "wait", "session_id": second})
	time.Sleep(time.Second)
	list := call("list", "process", map[string]any{"action": "list"})
	if !strings.Contains(list, `"job":"`+second+`"`) || !strings.Contains(list, `"type":"completion"`) {
		t.Errorf("process list does not return the held completion of %s: %s", second, list)
	}
	setLevel("l4", "info")
	time.Sleep(2 * time.Second)
	drain()
	if c1, c2 := completions(got, first), completions(got, second); c1 != 1 || c2 != 0 {
		t.Errorf("completion notices: %d of the first job (want 1), %d of the second, returned by list (want 0): %v", c1, c2, got)
	}
}
