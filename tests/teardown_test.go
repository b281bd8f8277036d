package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// treeShapes are the ways a command leaves processes behind; each %s is a
// long sleep marked so the test can find it.
var treeShapes = []string{
	`( setsid %s & )`,
	`setsid %s &`,
	`( ( %s & ) & )`,
	`nohup %s >/dev/null 2>&1 &`,
	`( trap '' TERM; %s ) &`,
	`bash -c '%s & disown' &`,
	`( setsid bash -c 'trap "" TERM HUP; %s & %s' & )`,
	`( exec setsid -f %s )`,
}

// randomTree builds one command from 1–3 shapes, ending either in a
// foreground sleep (so the timeout tears it down) or at once (so its
// leftovers are cleared when it exits).
func randomTree(r *rand.Rand, sleeper, marker string) (cmd string, timesOut bool) {
	sleep := sleeper + " " + marker
	var parts []string
	for n := 1 + r.IntN(3); n > 0; n-- {
		shape := treeShapes[r.IntN(len(treeShapes))]
		parts = append(parts, strings.ReplaceAll(shape, "%s", sleep))
	}
	timesOut = r.IntN(2) == 0
	if timesOut {
		parts = append(parts, "sleep 30")
	} else {
		parts = append(parts, "true")
	}
	return strings.Join(parts, "\n"), timesOut
}

// TestTeardown_NoSurvivorsOfRandomTrees protects the promise that a
// command's whole tree dies with it — children that call setsid, ignore
// SIGTERM or double-fork included — for a user without cgroup access as
// much as for root, and that runbox never says "killed" while a survivor
// lives: 50 random trees, 0 survivors.
func TestTeardown_NoSurvivorsOfRandomTrees(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + home + "/state"}
			tag := "rbtree-" + strconv.Itoa(os.Getpid()) + "-" + u.name
			t.Cleanup(func() { killMarked(tag) })
			// A long sleep whose argv[0] is its marker, runnable as u.
			sleeper := filepath.Join(home, "marked-sleep")
			if err := os.WriteFile(sleeper, []byte("#!/bin/bash\nexec -a \"$1\" sleep 1000\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			type tree struct {
				cmd      string
				timesOut bool
			}
			trees := make([]tree, 50)
			for i := range trees {
				trees[i].cmd, trees[i].timesOut = randomTree(r, sleeper, fmt.Sprintf("%s-%d", tag, i))
			}
			var wg sync.WaitGroup
			sem := make(chan struct{}, 10)
			for i, tr := range trees {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					// 3 s cuts the trees meant to time out; the others
					// get a bound that only catches a hang (a loaded
					// machine took over 3 s for `true` and a leftover).
					timeout := "120s"
					if tr.timesOut {
						timeout = "3s"
					}
					_, errOut, code := u.run(t, env, "run", "--yolo", "--timeout", timeout, "--", tr.cmd)
					want := 0
					if tr.timesOut {
						want = 124
					}
					if code != want {
						t.Errorf("tree %d exit %d, want %d\n%s\n%s", i, code, want, tr.cmd, errOut)
					}
				}()
			}
			wg.Wait()
			// Teardown has returned for every tree; allow a moment for the
			// kernel to finish removing what was killed.
			deadline := time.Now().Add(5 * time.Second)
			var left []string
			for {
				left = marked(tag)
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("%d processes survived their command's teardown:\n%s", len(left), strings.Join(left, "\n"))
			}
		})
	}
}

// marked lists the living processes whose argv[0] carries tag.
func marked(tag string) []string {
	ds, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range ds {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(b), tag) {
			continue
		}
		st, _ := os.ReadFile("/proc/" + d.Name() + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// killMarked kills what a failed run left, so one failure does not leak.
func killMarked(tag string) {
	for _, l := range marked(tag) {
		pid, _ := strconv.Atoi(strings.Fields(l)[0])
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestTeardown_LeftoversAnnounced protects the promise that killing what
// a command left running is never silent: one notice line on stderr in
// plain mode, and leftover_killed in --json. It runs where the subreaper
// is in use (an unprivileged user without cgroups).
func TestTeardown_LeftoversAnnounced(t *testing.T) {
	var u *user
	for _, x := range users(t) {
		if x.uid != 0 {
			u = &x
		}
	}
	if u == nil {
		integration.Skip(t, "needs root to switch to an unprivileged user")
	}
	home := u.home(t)
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + home + "/state"}
	_, errOut, code := u.run(t, env, "run", "--", "( setsid sleep 1000.6061 & ); echo hi")
	if code != 0 || !strings.Contains(errOut, "left 1 background process(es) running; they were killed") {
		t.Errorf("plain run: exit %d, stderr %q; want the leftover notice", code, errOut)
	}
	out, _, code := u.run(t, env, "run", "--json", "--", "( setsid sleep 1000.6062 & ); echo hi")
	if code != 0 || !strings.Contains(out, `"leftover_killed":1`) {
		t.Errorf("--json run: exit %d, %s; want leftover_killed 1", code, out)
	}
}
