package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/testtree"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
)

// newUndoServer is a server whose sessions record changes in a workspace
// of their own (the test's state directory keeps the journal), and the
// workspace, seeded with a few files, a directory and a link.
func newUndoServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	state, ws := t.TempDir(), t.TempDir()
	cfg := config.Default()
	cfg.Sandbox.Profile = confine.ProfileOff
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(k string) string {
		if k == "RUNBOX_STATE_DIR" {
			return state
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, _ := newServer(t, func(o *server.Options) {
		o.Service = svc
		o.Spec.Dir = ws
		o.JobDir = ws
	})
	for name, data := range map[string]string{"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\n", "sub/d.txt": "four\n"} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	return srv, ws
}

// startBackground starts command as a background job and returns its id.
func startBackground(t *testing.T, cs *mcp.ClientSession, command string) string {
	t.Helper()
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": command, "background": true, "notify_on_complete": true})
	return out["session_id"].(string)
}

// changesOf returns the changes object of a structured result, failing
// the test when there is none.
func changesOf(t *testing.T, what string, out map[string]any) map[string]any {
	t.Helper()
	ch, ok := out["changes"].(map[string]any)
	if !ok || ch["step"] == nil {
		t.Fatalf("%s: no changes with a step in %v", what, out)
	}
	return ch
}

// TestUndo_BackgroundJob: through the MCP transport with the SDK's
// client, a background job's writes, deletions and renames come back in
// the process tool's wait result and its completion notice, the undo
// tool's list names the job, and undo puts the workspace back byte for
// byte. Before, the job's changes were nobody's step.
func TestUndo_BackgroundJob(t *testing.T) {
	srv, ws := newUndoServer(t)
	n := &notices{}
	cs := connect(t, srv, &mcp.ClientOptions{LoggingMessageHandler: n.handle})
	before := testtree.State(t, ws)
	id := startBackground(t, cs, "printf new > a.txt; rm b.txt; mv c.txt renamed.txt; echo x > sub/new.txt; chmod 600 sub/d.txt")
	out, txt := mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 60})
	ch := changesOf(t, "wait", out)
	if list, _ := ch["changes"].([]any); len(list) < 5 || !strings.Contains(txt, "[changed") {
		t.Errorf("wait: changes %v, text %q; want the five changes, said in the text too", ch, txt)
	}
	testwait.Until(t, "the completion notice", func() bool { return len(n.of(id, "completion")) > 0 })
	if nt := n.of(id, "completion")[0]; nt.Changes == nil || nt.Changes.Step != int64(ch["step"].(float64)) {
		t.Errorf("completion notice = %+v; want the job's changes", nt)
	}
	_, list := mustOK(t, cs, "undo", map[string]any{"list": true})
	if !strings.Contains(list, "job "+id+": ") {
		t.Errorf("undo list = %q; want the job's step labelled with its id", list)
	}
	_, undone := mustOK(t, cs, "undo", map[string]any{})
	if !strings.Contains(undone, id) {
		t.Errorf("undo said %q; want the job named", undone)
	}
	testtree.Same(t, "after undo", before, testtree.State(t, ws))
}

// TestUndo_BackgroundJobOverlap: a terminal command that runs while the
// job runs; undoing from the job's step undoes both and says so.
func TestUndo_BackgroundJobOverlap(t *testing.T) {
	srv, ws := newUndoServer(t)
	cs := connect(t, srv, nil)
	before := testtree.State(t, ws)
	id := startBackground(t, cs, "printf j1 > j.txt; while [ ! -e go ]; do sleep 0.02; done; printf j2 >> j.txt; rm go a.txt")
	fg, _ := mustOK(t, cs, "terminal", map[string]any{"command": "printf f > f.txt; rm b.txt; touch go"})
	if c := fmt.Sprint(changesOf(t, "foreground", fg)["concurrent"]); !strings.Contains(c, id) {
		t.Errorf("foreground's concurrent = %s; want the job", c)
	}
	out, _ := mustOK(t, cs, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 60})
	step := changesOf(t, "wait", out)["step"]
	_, undone := mustOK(t, cs, "undo", map[string]any{"to": step})
	if !strings.Contains(undone, id) || !strings.Contains(undone, "touch go") {
		t.Errorf("undo said %q; want both the job and the foreground command named", undone)
	}
	testtree.Same(t, "after undo", before, testtree.State(t, ws))
}

// TestUndo_BackgroundJobKilled: a job killed midway; the kill result
// carries what it did, and undo removes it.
func TestUndo_BackgroundJobKilled(t *testing.T) {
	srv, ws := newUndoServer(t)
	cs := connect(t, srv, nil)
	before := testtree.State(t, ws)
	id := startBackground(t, cs, "printf k > k.txt; rm a.txt; mkdir -p made/deep; touch started; exec sleep 600")
	testwait.Until(t, "the job's first writes", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	out, _ := mustOK(t, cs, "process", map[string]any{"action": "kill", "session_id": id})
	step := changesOf(t, "kill", out)["step"]
	mustOK(t, cs, "undo", map[string]any{"to": step})
	testtree.Same(t, "after undo", before, testtree.State(t, ws))
}

// TestUndo_YieldedCommand: a command run with yield runs as a job; when
// it ends within its yield, its foreground-shaped result carries its
// changes like any terminal result, and undo puts them back.
func TestUndo_YieldedCommand(t *testing.T) {
	srv, ws := newUndoServer(t)
	cs := connect(t, srv, nil)
	before := testtree.State(t, ws)
	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "printf y > y.txt; rm b.txt", "yield": 30})
	changesOf(t, "yielded command", out)
	mustOK(t, cs, "undo", map[string]any{})
	testtree.Same(t, "after undo", before, testtree.State(t, ws))
}
