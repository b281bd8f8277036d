package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// The daemon SIGKILLed while jobs run takes none of them down: they are
// supervised by the supervisor host, a process of its own that outlives
// the daemon, so the next daemon finds them still running under the same
// host, and each ends with its own exit code and complete output. Breaks
// if the host dies with the daemon, or the jobs share nothing (one
// supervisor each) where a container is available.
func TestJobs_CLIDaemonKilledHostKeepsJobs(t *testing.T) {
	env := jobsEnv(t)
	state := env["RUNBOX_STATE_DIR"]
	flag := filepath.Join(t.TempDir(), "go-on")
	const n = 3
	ids := make([]string, n)
	for i := range n {
		sh := fmt.Sprintf(`echo start-%d; while [ ! -e %s ]; do sleep 0.05; done; echo end-%d; exit %d`, i, flag, i, 10+i)
		out, errs, code := jcli(t, env, "start", "--", sh)
		if code != 0 {
			t.Fatalf("start: exit %d, %s", code, errs)
		}
		ids[i] = strings.TrimSpace(out)
	}
	host := jobInfo(t, env, ids[0])
	if host.Containment == "" {
		integration.Skip(t, "no container for jobs here (each job has a supervisor of its own): %s", host.Warning)
	}
	for _, id := range ids[1:] {
		if in := jobInfo(t, env, id); in.SupervisorPID != host.SupervisorPID {
			t.Fatalf("job %s has supervisor %d, job %s has %d: not one host", id, in.SupervisorPID, ids[0], host.SupervisorPID)
		}
	}

	pid, err := (&procregistry.Client{Path: daemonSocket(state)}).Ping(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if syscall.Kill(host.SupervisorPID, 0) != nil {
		t.Fatalf("the supervisor host %d died with the daemon", host.SupervisorPID)
	}
	for _, id := range ids {
		// A new daemon (started by ps) finds the job running, under the
		// same live supervisor: not adopted as an orphan.
		in := jobInfo(t, env, id)
		if in.Status != procregistry.StatusRunning || in.SupervisorPID != host.SupervisorPID || strings.Contains(in.Warning, "supervisor died") {
			t.Errorf("after the daemon's death: %+v", in)
		}
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		out, errs, code := jcli(t, env, "wait", "--timeout", "30s", id)
		if code != 10+i {
			t.Errorf("wait %s: %q, exit %d, %s; want exit %d", id, out, code, errs, 10+i)
		}
		if out, _, _ := jcli(t, env, "logs", id); out != fmt.Sprintf("start-%d\nend-%d\n", i, i) {
			t.Errorf("logs %s = %q", id, out)
		}
	}
	testwait.Within(t, 30*time.Second, "the idle host gone", func() bool { return syscall.Kill(host.SupervisorPID, 0) != nil })
}
