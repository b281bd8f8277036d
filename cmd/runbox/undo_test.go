package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testtree"
)

// newUndoWorkspace is a project: files, a tree, a script, a link, and a
// git repository with edits not committed.
func newUndoWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		"notes.txt":       "hand-written notes\n",
		"src/main.go":     "package main\n\nfunc main() {}\n",
		"src/util.go":     "package main\n",
		"tree/a/one.txt":  "one\n",
		"tree/a/b/two.md": "two\n",
		"tree/three":      "three\n",
		"run.sh":          "#!/bin/sh\necho run\n",
	}
	for p, text := range files {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(ws, "run.sh"), 0o755)
	os.Symlink("src/main.go", filepath.Join(ws, "main-link"))
	if _, err := exec.LookPath("git"); err == nil {
		git := func(args ...string) {
			cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
			cmd.Dir = ws
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, b)
			}
		}
		git("init", "-q")
		git("add", ".")
		git("commit", "-qm", "first")
		os.WriteFile(filepath.Join(ws, "src/main.go"), []byte("package main\n\n// work not committed\nfunc main() {}\n"), 0o644)
	}
	return ws
}

// destructiveCommands are what agents do by mistake, each undone in turn.
var destructiveCommands = []string{
	"echo overwritten > notes.txt",
	"rm -rf tree",
	"mv src/util.go src/helpers.go",
	"chmod 600 run.sh",
	"git checkout . 2>&1 || rm src/main.go",
	"head -c 100000000 /dev/zero > big.bin && ln -sf notes.txt main-link",
	"mkdir -p gen && for i in $(seq 1 300); do echo $i > gen/f$i; done && rm notes.txt",
}

// TestUndo_ServeEveryDestructiveCommand: `runbox serve` as shipped, over
// stdio and HTTP with the official SDK's client, records what each
// command changes and the undo tool puts the workspace back byte for
// byte (content, modes, links, deleted trees), command after command.
func TestUndo_ServeEveryDestructiveCommand(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ws := newUndoWorkspace(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cs, _ := serveUndo(ctx, t, transport, ws)
			for _, command := range destructiveCommands {
				before := testtree.State(t, ws)
				res := callTool(ctx, t, cs, "terminal", map[string]any{"command": command})
				var out struct {
					ExitCode int `json:"exit_code"`
					Changes  *struct {
						Step    int64 `json:"step"`
						Changes []struct {
							Path, Kind string
						} `json:"changes"`
					} `json:"changes"`
				}
				decode(t, res, &out)
				if out.Changes == nil || out.Changes.Step == 0 || len(out.Changes.Changes) == 0 {
					t.Fatalf("%s: no changes in the result: %s", command, structured(res))
				}
				if maps.Equal(before, testtree.State(t, ws)) {
					t.Fatalf("%s changed nothing: the test proves nothing", command)
				}
				undone := callTool(ctx, t, cs, "undo", map[string]any{})
				if undone.IsError {
					t.Fatalf("undo after %s: %s", command, structured(undone))
				}
				testtree.Same(t, "after undoing "+command, before, testtree.State(t, ws))
			}
			if res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "undo", Arguments: map[string]any{}}); !res.IsError {
				t.Errorf("undo with every command undone already: want an error, got %s", structured(res))
			}
		})
	}
}

// serveUndo starts runbox serve as shipped in ws, with the gate out of
// the way (--yolo: it would ask about rm -rf and git checkout, and nobody
// is there to answer; undo is what is tested) and a home directory of its
// own (a home directory is never a recorded workspace), and connects the
// SDK's client over transport.
func serveUndo(ctx context.Context, t *testing.T, transport, ws string) (*mcp.ClientSession, func() string) {
	t.Helper()
	cmd := serveCommand(t, serveAttack{ws: ws}, "--yolo")
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	return connectServe(ctx, t, transport, cmd)
}

func callTool(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func structured(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res.StructuredContent)
	return string(b)
}

func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(structured(res)), v); err != nil {
		t.Fatal(err)
	}
}

// TestUndo_RunChangesThenUndo: `runbox run --changes` says what the
// command changed (in --json and on stderr), `runbox undo` puts it back,
// a second undo has nothing left, and without --changes nothing is
// recorded (the default for a one-shot run).
func TestUndo_RunChangesThenUndo(t *testing.T) {
	ws := newUndoWorkspace(t)
	t.Chdir(ws)
	env := map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}
	before := testtree.State(t, ws)
	out, stderr, code := cli(t, "", env, "run", "--changes", "--json", "--", "sed -i s/main/MAIN/ src/*.go && rm -r tree")
	var res struct {
		Changes struct {
			Step    int64 `json:"step"`
			Changes []struct{ Path, Kind string }
		} `json:"changes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Changes.Step == 0 {
		t.Fatalf("run: exit %d, out %s, stderr %s", code, out, stderr)
	}
	kinds := map[string]string{}
	for _, c := range res.Changes.Changes {
		kinds[c.Path] = c.Kind
	}
	if kinds["src/main.go"] != "modified" || kinds["tree/a/b/two.md"] != "deleted" {
		t.Errorf("changes %+v: want src/main.go modified, tree/a/b/two.md deleted", res.Changes.Changes)
	}
	out, stderr, code = cli(t, "", env, "undo")
	if code != 0 || !strings.Contains(out, "undid step") {
		t.Fatalf("undo: exit %d, out %s, stderr %s", code, out, stderr)
	}
	testtree.Same(t, "after runbox undo", before, testtree.State(t, ws))
	if _, stderr, code = cli(t, "", env, "undo"); code == 0 {
		t.Errorf("a second undo: exit 0, want a refusal (nothing left): %s", stderr)
	}
	out, _, _ = cli(t, "", env, "run", "--json", "--", "echo x > new.txt")
	if strings.Contains(out, `"changes"`) {
		t.Errorf("run without --changes recorded changes: %s", out)
	}
	_, stderr, _ = cli(t, "", env, "run", "--changes", "--", "echo y > other.txt")
	if !strings.Contains(stderr, "created other.txt") || !strings.Contains(stderr, "runbox undo") {
		t.Errorf("run --changes on a terminal-less stderr: %q; want what changed and how to undo it", stderr)
	}
}

// TestUndo_KeepsTheUsersEdits: an edit the user made after a command, to
// a path the command changed, makes undo refuse and name it, changing
// nothing; --force reverts the user's edits of that time too. An edit to
// another path alone survives an undo.
func TestUndo_KeepsTheUsersEdits(t *testing.T) {
	ws := newUndoWorkspace(t)
	t.Chdir(ws)
	env := map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}
	before := testtree.State(t, ws)
	if _, stderr, code := cli(t, "", env, "run", "--changes", "--", "echo agent > notes.txt"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(ws, "mine.txt"), []byte("mine\n"), 0o644)
	if _, stderr, code := cli(t, "", env, "undo"); code != 0 {
		t.Fatalf("undo with an edit elsewhere: %d %s", code, stderr)
	}
	after := testtree.State(t, ws)
	if after["mine.txt"] == "" {
		t.Fatalf("undo removed mine.txt, the user's edit to another path")
	}
	delete(after, "mine.txt")
	testtree.Same(t, "after undo", before, after)
	os.Remove(filepath.Join(ws, "mine.txt"))

	if _, stderr, code := cli(t, "", env, "run", "--changes", "--", "echo agent > notes.txt"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the user's edit\n"), 0o644)
	_, stderr, code := cli(t, "", env, "undo")
	if code == 0 || !strings.Contains(stderr, "notes.txt") {
		t.Fatalf("undo over the user's edit: exit %d, %s; want a refusal naming notes.txt", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "the user's edit\n" {
		t.Fatalf("a refused undo changed notes.txt: %q", b)
	}
	if _, stderr, code = cli(t, "", env, "undo", "--force"); code != 0 {
		t.Fatalf("undo --force: %d %s", code, stderr)
	}
	testtree.Same(t, "after undo --force", before, testtree.State(t, ws))
}

// TestUndo_TenThousandFilesAndTheBound: a command that creates 10,000
// files is undone whole; with undo_max small, older steps are dropped
// and said so, and undo to a dropped step is refused.
func TestUndo_TenThousandFilesAndTheBound(t *testing.T) {
	ws := newUndoWorkspace(t)
	t.Chdir(ws)
	env := map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}
	before := testtree.State(t, ws)
	_, stderr, code := cli(t, "", env, "run", "--changes", "--", "mkdir many && cd many && seq 1 10000 | xargs touch")
	if code != 0 || !strings.Contains(stderr, "changed 10001 path(s)") {
		t.Fatalf("run: exit %d, stderr %s; want 10,001 changes said (the directory and its files)", code, stderr)
	}
	if _, stderr, code = cli(t, "", env, "undo"); code != 0 {
		t.Fatalf("undo: %d %s", code, stderr)
	}
	testtree.Same(t, "after undoing 10,000 files", before, testtree.State(t, ws))

	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("workspace:\n  undo_max: 3M\n"), 0o600)
	env["RUNBOX_CONFIG"] = cfg
	var steps []int64
	dropped := false
	for i := range 4 {
		out, stderr, code := cli(t, "", env, "run", "--changes", "--json", "--", "head -c 1000000 /dev/urandom > blob")
		var res struct {
			Changes struct {
				Step    int64 `json:"step"`
				Dropped int   `json:"dropped"`
			} `json:"changes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("run %d: %d %s %s", i, code, out, stderr)
		}
		steps = append(steps, res.Changes.Step)
		dropped = dropped || res.Changes.Dropped > 0
	}
	if !dropped {
		t.Fatalf("4 MB of changes under a 3 MB bound: no step reported dropped")
	}
	_, stderr, code = cli(t, "", env, "undo", "--to", fmt.Sprint(steps[0]))
	if code == 0 || !strings.Contains(stderr, "dropped") {
		t.Errorf("undo to a dropped step: exit %d, %s; want a refusal saying it was dropped", code, stderr)
	}
	out, stderr, code := cli(t, "", env, "run", "--changes", "--json", "--", "head -c 4000000 /dev/urandom > huge")
	var res struct {
		Changes struct {
			NotKept []string `json:"not_kept"`
		} `json:"changes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !slices.Contains(res.Changes.NotKept, "huge") {
		t.Errorf("a 4 MB file under a 3 MB bound: exit %d, out %s, stderr %s; want huge in not_kept", code, out, stderr)
	}
}

// TestUndo_ServeBackgroundJob: `runbox serve` as shipped, with the
// official SDK's client over stdio and HTTP: a background job's writes,
// deletions and renames are its own step; the process tool's wait
// result carries them, and the undo tool, naming the job, puts the
// workspace back byte for byte.
func TestUndo_ServeBackgroundJob(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ws := newUndoWorkspace(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cs, stderr := serveUndo(ctx, t, transport, ws)
			before := testtree.State(t, ws)
			started := callTool(ctx, t, cs, "terminal", map[string]any{
				"command":    "echo job > notes.txt; rm -rf tree; mv src/util.go src/helpers.go; chmod 600 run.sh",
				"background": true, "workdir": ws,
			})
			var job struct {
				ID string `json:"session_id"`
			}
			decode(t, started, &job)
			if started.IsError || job.ID == "" {
				t.Fatalf("background start: %s\n%s", structured(started), stderr())
			}
			waited := callTool(ctx, t, cs, "process", map[string]any{"action": "wait", "session_id": job.ID, "timeout": 60})
			var out struct {
				Done    bool `json:"done"`
				Changes *struct {
					Step    int64            `json:"step"`
					Changes []map[string]any `json:"changes"`
				} `json:"changes"`
			}
			decode(t, waited, &out)
			if !out.Done || out.Changes == nil || out.Changes.Step == 0 || len(out.Changes.Changes) == 0 {
				t.Fatalf("wait: no changes in the result: %s", structured(waited))
			}
			if maps.Equal(before, testtree.State(t, ws)) {
				t.Fatal("the job changed nothing: the test proves nothing")
			}
			undone := callTool(ctx, t, cs, "undo", map[string]any{})
			if undone.IsError || !strings.Contains(structured(undone), job.ID) {
				t.Fatalf("undo: %s; want the job named", structured(undone))
			}
			testtree.Same(t, "after undoing the job", before, testtree.State(t, ws))
		})
	}
}
