package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// contextSwitches sums the context switches of every thread of pid.
func contextSwitches(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}

// Quiet jobs, even with watch patterns and heartbeats, cost the job
// daemon nothing: its followers wait for the logs to be written (inotify)
// instead of looking at them every so often, so over two seconds the
// daemon is hardly scheduled. Breaks if a per-job timer or poll returns.
func TestJobs_CLIIdleDaemonSleeps(t *testing.T) {
	env := jobsEnv(t)
	var ids []string
	for range 5 {
		out, errs, code := jcli(t, env, "start", "--watch", "never-printed", "--heartbeat", "60s", "--", "exec sleep 60")
		if code != 0 {
			t.Fatalf("start: exit %d: %s", code, errs)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	// A last round trip, so the daemon has answered everything.
	jcli(t, env, "ps")
	c := &procregistry.Client{Path: daemonSocket(env["RUNBOX_STATE_DIR"])}
	pid, err := c.Ping(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Let the start-up settle (a garbage collection, the runtime giving
	// memory back): what is measured is what goes on after.
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := contextSwitches(t, pid)
		<-time.After(300 * time.Millisecond) // observation window, bounded by deadline
		if contextSwitches(t, pid) == a {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon never went quiet for 300 ms")
		}
	}
	// Five jobs looked at once a second would be ten wakeups in every
	// window; the daemon's own sweeper (every ten seconds) and the Go
	// runtime's occasional housekeeping on a loaded machine may add a
	// few to one window, so the quietest of three windows is judged.
	d := 0
	for range 3 {
		before := contextSwitches(t, pid)
		<-time.After(2 * time.Second) // the observation window itself
		if d = contextSwitches(t, pid) - before; d <= 5 {
			break
		}
	}
	if d > 5 {
		t.Errorf("the daemon was scheduled %d times in 2 s with %d idle jobs; want ≤ 5", d, len(ids))
	}
}
