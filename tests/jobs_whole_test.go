package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// leftoverKinds are the ways a job leaves processes behind when its
// command ends; each %s runs a canary whose argv[0] is its marker.
var leftoverKinds = []struct{ name, shape, prog string }{
	{"setsid", `( setsid %s & )`, "sleeper"},
	{"nohup", `nohup %s >/dev/null 2>&1 &`, "sleeper"},
	{"term-ignoring", `%s &`, "looper"},
}

// canaries writes the two canary programs into dir for u: a sleep and a
// loop that ignores SIGTERM, each with its first argument as argv[0].
func canaries(t *testing.T, u user, dir string) (sleeper, looper string) {
	t.Helper()
	sleeper, looper = filepath.Join(dir, "canary-sleep"), filepath.Join(dir, "canary-loop")
	writeOwned(t, u, sleeper, "#!/bin/bash\nexec -a \"$1\" sleep 1000\n", 0o755)
	writeOwned(t, u, looper, "#!/bin/bash\ntrap '' TERM\nexec -a \"$1\" bash -c 'while :; do sleep 1; done'\n", 0o755)
	return sleeper, looper
}

// leftovers is a command that leaves one canary of each kind running,
// each marked tag-kind, and ends with tail.
func leftovers(sleeper, looper, tag, tail string) string {
	var parts []string
	for _, k := range leftoverKinds {
		prog := sleeper
		if k.prog == "looper" {
			prog = looper
		}
		parts = append(parts, fmt.Sprintf(k.shape, prog+" "+tag+"-"+k.name))
	}
	return strings.Join(append(parts, tail), "\n")
}

// waitMarked waits (bounded) until no living process carries tag and
// returns what still does.
func waitMarked(tag string, within time.Duration) []string {
	deadline := time.Now().Add(within)
	for {
		left := marked(tag)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitCanaries waits until every kind of canary of tag runs, so a
// teardown is tested against all of them.
func awaitCanaries(t *testing.T, tag string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(marked(tag)) < len(leftoverKinds) {
		if time.Now().After(deadline) {
			t.Fatalf("the canaries of %s did not all start: %v", tag, marked(tag))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobs_EndWhole protects the promise that a background job ends
// whole, as a foreground command does: what its command leaves running
// (a setsid child, a nohup'd one, one that ignores SIGTERM) is killed when
// the command ends, and `runbox kill` of a running job takes all of it;
// for root (a cgroup per job) and for a user without cgroup access (the
// job's supervisor is its subreaper). Each canary is found by the marker
// in its argv.
func TestJobs_EndWhole(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			sleeper, looper := canaries(t, u, filepath.Dir(home))
			tag := "rbjob-" + strconv.Itoa(os.Getpid()) + "-" + u.name
			t.Cleanup(func() { killMarked(tag) })

			t.Run("command ends", func(t *testing.T) {
				tag := tag + "-ends"
				// The command waits for its canaries, then ends.
				cmd := leftovers(sleeper, looper, tag, fmt.Sprintf("while [ $(pgrep -fc '^%s') -lt %d ]; do sleep 0.05; done", tag, len(leftoverKinds)))
				out, errOut, code := u.run(t, env, "--yolo", "--sandbox", "off", "start", "--", cmd)
				id := strings.TrimSpace(out)
				if code != 0 {
					t.Fatalf("start: exit %d: %s", code, errOut)
				}
				out, errOut, code = u.run(t, env, "wait", "--json", "--timeout", "60s", id)
				if code != 0 {
					t.Fatalf("wait: exit %d: %s %s", code, out, errOut)
				}
				// Reported ended means nothing is left: no wait beyond the
				// kernel's removal of the dead.
				if left := waitMarked(tag, 2*time.Second); len(left) > 0 {
					t.Errorf("job %s ended and left running:\n%s", id, strings.Join(left, "\n"))
				}
				var in struct {
					Info struct {
						Exit struct {
							Leftovers int `json:"leftover_killed"`
						} `json:"exit"`
					} `json:"info"`
				}
				json.Unmarshal([]byte(out), &in)
				// The loop's own sleep may be counted too.
				if in.Info.Exit.Leftovers < len(leftoverKinds) {
					t.Errorf("wait --json %s; want leftover_killed %d at least", out, len(leftoverKinds))
				}
				if out, _, _ := u.run(t, env, "kill", id); !strings.Contains(out, "already exited") {
					t.Errorf("kill after the end: %q; want already exited (nothing was left)", out)
				}
			})

			t.Run("kill", func(t *testing.T) {
				tag := tag + "-kill"
				out, errOut, code := u.run(t, env, "--yolo", "--sandbox", "off", "start", "--", leftovers(sleeper, looper, tag, "sleep 1000"))
				id := strings.TrimSpace(out)
				if code != 0 {
					t.Fatalf("start: exit %d: %s", code, errOut)
				}
				awaitCanaries(t, tag)
				if out, errOut, code := u.run(t, env, "kill", id); code != 0 || !strings.Contains(out, "killed") {
					t.Errorf("kill: exit %d, %q %s", code, out, errOut)
				}
				if left := waitMarked(tag, 2*time.Second); len(left) > 0 {
					t.Errorf("kill of job %s left running:\n%s", id, strings.Join(left, "\n"))
				}
			})
		})
	}
}

// TestJobs_SessionEndTakesItsJobsWhole: a stock MCP client starts, as
// background jobs of a `runbox serve` session, jobs that leave a nohup'd
// sleep or a setsid one behind and end at once, jobs that do the same and
// run on, and a loop that ignores SIGTERM, then closes the session
// cleanly. Every canary is gone once the server has exited (the first
// kind's as soon as their job ended); as root and as an unprivileged
// user.
func TestJobs_SessionEndTakesItsJobsWhole(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			sleeper, looper := canaries(t, u, filepath.Dir(home))
			tag := "rbserve-" + strconv.Itoa(os.Getpid()) + "-" + u.name
			t.Cleanup(func() { killMarked(tag) })

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := u.command(ctx, env, "--yolo", "--sandbox", "off", "serve")
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "stock", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs := []string{
				fmt.Sprintf("nohup %s %s-nohup-ends >/dev/null 2>&1 &", sleeper, tag),
				fmt.Sprintf("( setsid %s %s-setsid-ends & )", sleeper, tag),
				fmt.Sprintf("nohup %s %s-nohup >/dev/null 2>&1 & sleep 1000", sleeper, tag),
				fmt.Sprintf("( setsid %s %s-setsid & ); sleep 1000", sleeper, tag),
				fmt.Sprintf("%s %s-loop", looper, tag),
			}
			const running = 3 // the canaries of the jobs that run on
			for _, c := range jobs {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": c, "background": true}})
				if err != nil || res.IsError {
					t.Fatalf("background %q: %v %+v", c, err, res)
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(marked(tag)) < running {
				if time.Now().After(deadline) {
					t.Fatalf("the canaries did not all start: %v", marked(tag))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := cs.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
				t.Errorf("runbox serve did not exit by itself on a clean close: %v", cmd.ProcessState)
			}
			if left := waitMarked(tag, 5*time.Second); len(left) > 0 {
				t.Errorf("the session ended and its jobs left running:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}
