package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// TestExecuteCode_StateAcrossCalls: one MCP session keeps one kernel, so
// a variable set in one call is there in the next; code calls terminal
// through the gate; reset empties the namespace.
func TestExecuteCode_StateAcrossCalls(t *testing.T) {
	srv, _ := newServer(t, nil)
	e := &elicitor{res: mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "session"}}}
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: e.handle})
	mustOK(t, cs, "execute_code", map[string]any{"code": "x = 41"})
	out, txt := mustOK(t, cs, "execute_code", map[string]any{"code": "print(x + 1)"})
	if out["stdout"] != "42\n" || out["status"] != "ok" || !strings.Contains(txt, "42") {
		t.Errorf("second call = %v, %q; want stdout 42", out, txt)
	}

	out, _ = mustOK(t, cs, "execute_code", map[string]any{"code": "import runbox\n" +
		"n = sum(runbox.terminal('echo %d' % i)['output'].strip() == str(i) for i in range(50))\n" +
		"try:\n    runbox.terminal('rm -rf --no-preserve-root /')\n    refused = False\n" +
		"except runbox.Denied as e:\n    refused = e.data['hardline']\n" +
		"(n, refused)"})
	if out["result"] != "(50, True)" {
		t.Errorf("tool calls from code = %v; want (50, True)", out)
	}

	out, _ = mustOK(t, cs, "execute_code", map[string]any{"code": "'x' in globals()", "reset": true})
	if out["result"] != "False" {
		t.Errorf("after reset: %v; want False", out)
	}
	// Running code on the host asked once; "session" allowed the rest.
	if n := e.n.Load(); n != 1 {
		t.Errorf("the human was asked %d times; want once", n)
	}
	// Another client has a kernel of its own.
	other := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: e.handle})
	out, _ = mustOK(t, other, "execute_code", map[string]any{"code": "'n' in globals()"})
	if out["result"] != "False" {
		t.Errorf("another session sees %v; want False", out)
	}
}

// TestExecuteCode_ErrorIsAResult: a Python exception is a result with
// the traceback, not a tool error; the kernel lives on.
func TestExecuteCode_ErrorIsAResult(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: (&elicitor{res: mcp.ElicitResult{Action: "accept"}}).handle})
	out, txt := mustOK(t, cs, "execute_code", map[string]any{"code": "1/0"})
	if out["status"] != "error" || out["ename"] != "ZeroDivisionError" || !strings.Contains(txt, "ZeroDivisionError") {
		t.Errorf("1/0 = %v, %q; want a ZeroDivisionError result", out, txt)
	}
	if out, _ := mustOK(t, cs, "execute_code", map[string]any{"code": "2 + 2"}); out["result"] != "4" {
		t.Errorf("after the error: %v", out)
	}
}

// TestExecuteCode_KernelEndsWithTheSession: the kernel's interpreter is
// killed when its client goes away.
func TestExecuteCode_KernelEndsWithTheSession(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: (&elicitor{res: mcp.ElicitResult{Action: "accept"}}).handle})
	out, _ := mustOK(t, cs, "execute_code", map[string]any{"code": "import os\nos.getpid()"})
	pid, _ := out["result"].(string)
	if _, err := os.Stat("/proc/" + pid); pid == "" || err != nil {
		t.Fatalf("kernel pid %q: %v", pid, err)
	}
	cs.Close()
	testwait.Until(t, "the kernel to exit with its session", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	})
}

// TestExecuteCode_GatedOnTheHost: on a backend with host access a cell is
// a decision like a command: with nobody to ask it is refused, names the
// rule and how to allow it, and nothing runs.
func TestExecuteCode_GatedOnTheHost(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	mark := filepath.Join(t.TempDir(), "ran")
	res := call(t, cs, "execute_code", map[string]any{"code": "open(" + pyQuote(mark) + ", 'w').close()"})
	if !res.IsError {
		t.Fatalf("code ran unattended on the host: %s", text(res))
	}
	e := structured(t, res)
	if e["kind"] != "denied" || !strings.Contains(text(res), "inline-code") {
		t.Errorf("error = %v; want a refusal naming inline-code", e)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the refused cell ran")
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }

// TestExecuteCode_EvictedKernelSaysSo: with one kernel for the whole
// server, a second session's code evicts the first's idle kernel; the
// first session's next call runs in a fresh kernel and says so.
func TestExecuteCode_EvictedKernelSaysSo(t *testing.T) {
	srv, _ := newServer(t, func(o *server.Options) { o.MaxKernels = 1 })
	accept := &mcp.ClientOptions{ElicitationHandler: (&elicitor{res: mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "session"}}}).handle}
	a := connect(t, srv, accept)
	b := connect(t, srv, accept)
	mustOK(t, a, "execute_code", map[string]any{"code": "x = 1"})
	mustOK(t, b, "execute_code", map[string]any{"code": "y = 1"})
	out, txt := mustOK(t, a, "execute_code", map[string]any{"code": "'x' in globals()"})
	if out["result"] != "False" || out["restarted"] != true || !strings.Contains(txt, "gone") {
		t.Errorf("after eviction: %v, %q; want a restarted kernel that says so", out, txt)
	}
}

// TestExecuteCode_BackgroundJobFromCode: code starts a background job
// with runbox.terminal and waits for it with runbox.process, both as the
// session's own tools.
func TestExecuteCode_BackgroundJobFromCode(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, &mcp.ClientOptions{ElicitationHandler: (&elicitor{res: mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "session"}}}).handle})
	out, _ := mustOK(t, cs, "execute_code", map[string]any{"code": "import runbox\n" +
		"j = runbox.terminal('echo from-job', background=True)\n" +
		"w = runbox.process('wait', session_id=j['session_id'], timeout=30)\n" +
		"log = runbox.process('log', session_id=j['session_id'])\n" +
		"(w['done'], log['output'].strip(), [x['id'] for x in runbox.process('list')['jobs']] == [j['session_id']])"})
	if out["result"] != "(True, 'from-job', True)" {
		t.Errorf("job from code: %v", out)
	}
}
