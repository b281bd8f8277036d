package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/server"
)

// daemonPy forks twice and calls setsid in between, as a classic daemon
// does, and sleeps.
const daemonPy = `import os, time
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
time.sleep(3600)
`

// escapingTrees are commands that leave processes behind in every way a
// shell can: a detached nohup, a disowned job, a loop that ignores
// SIGTERM, a daemon that forks twice and calls setsid, a subshell's
// orphan, and a loop that keeps starting setsid children.
var escapingTrees = []struct{ name, command string }{
	{"nohup", "nohup sleep 3600 >/dev/null 2>&1 &"},
	{"disown", "sleep 3600 & disown"},
	{"trap TERM", `bash -c 'trap "" TERM; while :; do sleep 1; done' >/dev/null 2>&1 &`},
	{"double fork", "python3 DAEMON >/dev/null 2>&1"},
	{"subshell orphan", "(sleep 3600 &)"},
	// A bash of its own rather than a subshell: a forked subshell's
	// environment in /proc is its parent's from before the export, and
	// the count must see the loop itself. The loop is in a file: the
	// gate asks about such a loop written on the command line, and this
	// test is about teardown, not the gate.
	{"setsid respawner", "bash RESPAWN >/dev/null 2>&1 &"},
}

// respawnSh keeps starting setsid children, without end.
const respawnSh = "while :; do setsid sleep 3600 & sleep 0.2; done\n"

// marked lists the processes whose environment holds mark: every process
// a marked command started, however it escaped its parent, carries it.
func marked(t *testing.T, mark string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		found = append(found, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return found
}

// TestHTTP_SessionCloseLeavesNothing protects the promise that closing an
// HTTP session (DELETE) leaves no process of it alive, whatever it ran:
// every escaping tree, in the foreground and as a background job, and a
// foreground command still running at the close. The trees are checked
// to be running before the close (the attack works), and every
// foreground command must run inside its container (no warning about
// it). Closing used to leave 51-133 processes running, still spawning:
// from the third command on, the shells ran outside any container.
func TestHTTP_SessionCloseLeavesNothing(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{Token: "s3cret"})
	hc := &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}
	cs := connectHTTP(t, url, hc, false, nil)

	b := make([]byte, 8)
	rand.Read(b)
	mark := "RB_TREE_MARK=" + hex.EncodeToString(b)
	t.Cleanup(func() { killMarked(t, mark) })
	daemon := filepath.Join(t.TempDir(), "daemon.py")
	if err := os.WriteFile(daemon, []byte(daemonPy), 0o644); err != nil {
		t.Fatal(err)
	}
	respawn := filepath.Join(t.TempDir(), "respawn.sh")
	if err := os.WriteFile(respawn, []byte(respawnSh), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tree := range escapingTrees {
		tree.command = strings.ReplaceAll(tree.command, "DAEMON", daemon)
		tree.command = strings.ReplaceAll(tree.command, "RESPAWN", respawn)
		out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "export " + mark + "\n" + tree.command + "\necho started"})
		if got := out["output"].(string); got != "started\n" || out["exit_code"] != 0.0 {
			t.Errorf("foreground %s: exit %v, output %q; want 0, started", tree.name, out["exit_code"], got)
		}
		// A leftover that holds the output may cut it; anything else (a
		// container that could not be used) is a failure.
		if ws, _ := out["warnings"].([]any); slices.ContainsFunc(ws, func(w any) bool { return w != local.OutputCutWarning }) {
			t.Errorf("foreground %s: warnings %q", tree.name, ws)
		}
		job, _ := mustOK(t, cs, "terminal", map[string]any{"command": "export " + mark + "\n" + tree.command + "\nsleep 3600", "background": true})
		if job["status"] != "running" {
			t.Errorf("background %s: %v", tree.name, job)
		}
	}
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo alive"})
	if out["output"] != "alive\n" {
		t.Errorf("a command after the trees printed %q; want alive", out["output"])
	}
	testwait.Until(t, "the background trees running", func() bool { return len(marked(t, mark)) >= 2*len(escapingTrees) })
	t.Logf("before the close:\n%s", strings.Join(marked(t, mark), "\n"))

	// A foreground command still running when the session closes: a
	// respawning loop, then a sleep in the command's own place.
	callCtx, cancelCall := context.WithCancel(t.Context())
	defer cancelCall()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		cs.CallTool(callCtx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{
			"command": "export " + mark + "\n" + strings.ReplaceAll(escapingTrees[len(escapingTrees)-1].command, "RESPAWN", respawn) + "\nexec sleep 3599",
		}})
	})
	testwait.Until(t, "the foreground command running", func() bool {
		return slices.ContainsFunc(marked(t, mark), func(p string) bool { return strings.HasSuffix(p, "sleep 3599 ") })
	})

	// The client's own Close waits for its calls to end before it sends
	// DELETE; a client that goes away mid-call sends it as is.
	del, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := hc.Do(del)
	if err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	testwait.Until(t, "the session closed", func() bool { return srv.Sessions() == 0 })
	cancelCall()
	wg.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for left := marked(t, mark); len(left) > 0; left = marked(t, mark) {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the closed session still alive:\n%s", len(left), strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killMarked kills what a failed run left, so one failure does not load
// the machine for the tests after it.
func killMarked(t *testing.T, mark string) {
	for range 20 { // a respawning loop may start another child meanwhile
		left := marked(t, mark)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			if pid, _ := strconv.Atoi(strings.Fields(p)[0]); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
