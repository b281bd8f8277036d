package main

import (
	"context"
	"crypto/rand"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUndo_ServeDocker: `runbox serve --backend docker` as shipped records
// what each command changed inside the container (runbox's agent keeps the
// journal there) and the undo tool puts the container's workspace back,
// judged by a listing taken in the container with find and sha256sum.
func TestUndo_ServeDocker(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	needAgent(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := serveCommand(t, serveAttack{ws: t.TempDir()}, "--yolo", "--backend", "docker", "--image", image, "--cwd", "/srv/ws")
			cs, stderr := connectServe(ctx, t, transport, cmd)
			sh := func(command string) (exit int, out string, changes int) {
				t.Helper()
				res := callTool(ctx, t, cs, "terminal", map[string]any{"command": command})
				var r struct {
					ExitCode int    `json:"exit_code"`
					Output   string `json:"output"`
					Changes  *struct {
						Changes []struct{ Path string } `json:"changes"`
					} `json:"changes"`
					Warnings []string `json:"warnings"`
				}
				decode(t, res, &r)
				if r.Changes != nil {
					changes = len(r.Changes.Changes)
				}
				if len(r.Warnings) > 0 {
					t.Logf("%s: warnings %q", command, r.Warnings)
				}
				return r.ExitCode, r.Output, changes
			}
			const listing = `find . -printf '%y %m %p %l\n' | LC_ALL=C sort; find . -type f -exec sha256sum {} + | LC_ALL=C sort`
			if code, out, _ := sh(`mkdir -p tree/a/b && echo one > tree/a/one && echo two > tree/a/b/two && printf 'notes\n' > notes.txt && chmod 640 notes.txt && ln -s notes.txt link && head -c 3000 /dev/urandom > blob`); code != 0 {
				t.Fatalf("setup: exit %d: %s\n%s", code, out, stderr())
			}
			_, before, _ := sh(listing)
			code, out, changed := sh(`rm -rf tree && echo overwritten > notes.txt && chmod 600 notes.txt && mv blob blob2 && ln -sf blob2 link`)
			if code != 0 || changed == 0 {
				t.Fatalf("destructive command: exit %d, %d changes listed: %s\n%s", code, changed, out, stderr())
			}
			if _, after, _ := sh(listing); after == before {
				t.Fatal("the command changed nothing the listing shows: the test proves nothing")
			}
			if res := callTool(ctx, t, cs, "undo", map[string]any{}); res.IsError {
				t.Fatalf("undo: %s\n%s", structured(res), stderr())
			}
			if _, restored, _ := sh(listing); restored != before {
				t.Errorf("after undo the container's workspace is\n%s\nwant\n%s", restored, before)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "undo", Arguments: map[string]any{"to": 1 << 40}})
			if err == nil && !res.IsError {
				t.Errorf("undo to a step that does not exist: want an error, got %s", structured(res))
			}
		})
	}
}

// TestUndo_CLIDockerTask: `runbox run --backend docker --task T --changes`
// records in the task's container, and `runbox undo --backend docker
// --task T` (another runbox, later) puts the container's workspace back;
// --list shows the command's step. Without --task it says what to give.
func TestUndo_CLIDockerTask(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	task := "undo-test-" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	where := []string{"--backend", "docker", "--image", image, "--task", task, "--cwd", "/srv/ws"}
	run := func(command string, changes bool) string {
		t.Helper()
		args := append([]string{"--yolo", "run"}, where...)
		if changes {
			args = append(args, "--changes")
		}
		out, stderr, code := cli(t, "", nil, append(args, "--", command)...)
		if code != 0 {
			t.Fatalf("run %q: exit %d: %s", command, code, stderr)
		}
		return out
	}
	const listing = `find . -printf '%y %m %p %l\n' | LC_ALL=C sort; find . -type f -exec sha256sum {} + | LC_ALL=C sort`
	run(`mkdir -p /srv/ws && cd /srv/ws && mkdir -p tree/a && echo one > tree/a/one && printf 'notes\n' > notes.txt && ln -s notes.txt link`, false)
	before := run(listing, false)
	run(`rm -rf tree && echo overwritten > notes.txt && chmod 600 notes.txt && ln -sf tree link`, true)
	if run(listing, false) == before {
		t.Fatal("the command changed nothing the listing shows: the test proves nothing")
	}
	list, stderr, code := cli(t, "", nil, append([]string{"undo", "--list"}, where...)...)
	if code != 0 || !strings.Contains(list, "rm -rf tree") {
		t.Fatalf("undo --list: exit %d, want the command's step: %s%s", code, list, stderr)
	}
	if out, stderr, code := cli(t, "", nil, append([]string{"undo"}, where...)...); code != 0 {
		t.Fatalf("undo: exit %d: %s%s", code, out, stderr)
	}
	if after := run(listing, false); after != before {
		t.Errorf("after runbox undo the container's workspace is\n%s\nwant\n%s", after, before)
	}
	_, stderr, code = cli(t, "", nil, "undo", "--backend", "docker", "--image", image)
	if code != 2 || !strings.Contains(stderr, "--task") {
		t.Errorf("undo --backend docker without --task: exit %d, %s; want a usage error naming --task", code, stderr)
	}
}
