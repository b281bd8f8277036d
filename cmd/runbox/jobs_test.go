package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/procregistry"
)

// jobsEnv is a private state dir (and so a private daemon) for one test.
// Cleanup stops the daemon after killing whatever jobs remain.
func jobsEnv(t *testing.T) map[string]string {
	t.Helper()
	t.Setenv("GORACE", "atexit_sleep_ms=0") // the daemon and supervisors are this race-built binary
	env := map[string]string{"RUNBOX_STATE_DIR": t.TempDir(), "RUNBOX_OWNER": "tester"}
	t.Cleanup(func() {
		out, _, _ := jcli(t, env, "ps", "--all", "--json")
		var jobs []procregistry.Info
		json.Unmarshal([]byte(out), &jobs)
		for _, j := range jobs {
			if !j.Status.Finished() {
				jcli(t, env, "kill", j.ID)
			}
		}
		c := &procregistry.Client{Path: daemonSocket(env["RUNBOX_STATE_DIR"])}
		pid, err := c.Ping(context.Background())
		if err != nil {
			return
		}
		syscall.Kill(pid, syscall.SIGTERM)
		waitGone(t, pid)
	})
	return env
}

// jcli runs runbox (with the job commands) like cli does.
func jcli(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
	a := newApp(strings.NewReader(""), &out, &errb, getenv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := a.execute(ctx, args)
	return out.String(), errb.String(), exitCode(err)
}

// The whole CLI round: start returns at once with an id; the job is
// listed, fed through stdin, waited for (exit code passed through), its
// log read whole and from an offset, and its completion queued.
func TestJobs_CLILifecycle(t *testing.T) {
	env := jobsEnv(t)
	out, errs, code := jcli(t, env, "start", "--notify", "--", `echo one; read x; echo "got $x"; exit 4`)
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("start printed %q; want a job id", out)
	}
	if out, _, _ := jcli(t, env, "ps"); !strings.Contains(out, id) || !strings.Contains(out, "running") {
		t.Errorf("ps:\n%s", out)
	}
	if out, _, code := jcli(t, env, "wait", "--timeout", "50ms", id[:5]); code != exitStillRunning || !strings.Contains(out, "running") {
		t.Errorf("wait with a timeout on a running job: %q, exit %d; want running, %d", out, code, exitStillRunning)
	}
	if _, errs, code := jcli(t, env, "submit", id, "hello"); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	if out, _, code := jcli(t, env, "wait", "--timeout", "30s", id); code != 4 || !strings.Contains(out, "exited 4") {
		t.Errorf("wait: %q, exit %d; want exited 4, exit 4", out, code)
	}
	if out, _, _ := jcli(t, env, "logs", id); out != "one\ngot hello\n" {
		t.Errorf("logs = %q", out)
	}
	out, errs, _ = jcli(t, env, "logs", "--offset", "4", id)
	if out != "got hello\n" || !strings.Contains(errs, "next offset 14") {
		t.Errorf("logs --offset 4 = %q, stderr %q", out, errs)
	}
	if out, _, _ := jcli(t, env, "logs", "--tail", "1", id); out != "got hello\n" {
		t.Errorf("logs --tail 1 = %q", out)
	}
	out, _, _ = jcli(t, env, "events")
	var ev procregistry.Event
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &ev); err != nil || ev.Type != procregistry.EventCompletion || ev.Job != id || ev.Exit.Code != 4 {
		t.Errorf("events printed %q (%v)", out, err)
	}
	if out, _, _ := jcli(t, env, "events"); out != "" {
		t.Errorf("events printed %q again; want each event once", out)
	}
}

// kill answers killed, then already exited; handoff moves the completion
// to the new owner; an unknown id is an error.
func TestJobs_CLIKillHandoff(t *testing.T) {
	env := jobsEnv(t)
	out, _, _ := jcli(t, env, "start", "--", "sleep 60")
	id := strings.TrimSpace(out)
	if out, _, _ := jcli(t, env, "handoff", "--note", "yours now", id, "other"); !strings.Contains(out, "other") {
		t.Errorf("handoff: %q", out)
	}
	if out, errs, code := jcli(t, env, "kill", id[:4]); code != 0 || out != id+" killed\n" {
		t.Errorf("kill: %q %q exit %d", out, errs, code)
	}
	if out, _, _ := jcli(t, env, "kill", id); !strings.Contains(out, "already exited") {
		t.Errorf("second kill: %q", out)
	}
	out, _, _ = jcli(t, env, "events", "--owner", "other")
	if !strings.Contains(out, `"type":"handoff"`) || !strings.Contains(out, `"type":"completion"`) || !strings.Contains(out, `"reason":"killed"`) {
		t.Errorf("events of the new owner:\n%s", out)
	}
	if _, errs, code := jcli(t, env, "logs", "ffffffffffff"); code != exitRunbox || !strings.Contains(errs, "not found") {
		t.Errorf("logs of an unknown job: exit %d, %q", code, errs)
	}
}

// The gate comes first: a refused command starts no job.
func TestJobs_CLIGate(t *testing.T) {
	env := jobsEnv(t)
	_, errs, code := jcli(t, env, "start", "--", "rm -rf /")
	if code == 0 || !strings.Contains(errs, "refused") {
		t.Errorf("start of rm -rf /: exit %d, %q", code, errs)
	}
}

// What a job reads from its stdin, its shell runs: write and submit pass
// the gate like any command, and a refused line never reaches the job.
func TestJobs_CLIWriteGated(t *testing.T) {
	env := jobsEnv(t)
	out, errs, code := jcli(t, env, "start", "--", "cat")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	for _, verb := range []string{"write", "submit"} {
		_, errs, code = jcli(t, env, verb, id, "rm -rf --no-preserve-root /")
		if code != exitRunbox || !strings.Contains(errs, "refused by the command gate") {
			t.Errorf("%s of a hardline command: exit %d, %q; want 125, refused", verb, code, errs)
		}
	}
	if _, errs, code = jcli(t, env, "submit", id, "echo fine"); code != 0 {
		t.Fatalf("submit of a harmless line: exit %d: %s", code, errs)
	}
	jcli(t, env, "close", id)
	if _, errs, code = jcli(t, env, "wait", "--timeout", "20s", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, errs)
	}
	logs, _, _ := jcli(t, env, "logs", "--offset", "0", id)
	if logs != "echo fine\n" {
		t.Errorf("the job read %q; want only the harmless line", logs)
	}
}

// kill reaches a grandchild that double-forked out of the job's session
// (`( setsid sleep N & )`): the job runs in a container, and the daemon's
// kill reopens it. Breaks if jobs run in their process group only.
func TestJobs_CLIKillContainedEscapee(t *testing.T) {
	env := jobsEnv(t)
	tag := fmt.Sprintf("781.%06d", os.Getpid()%1000000)
	out, errs, code := jcli(t, env, "start", "--", fmt.Sprintf("( setsid sleep %s & ) ; sleep 783", tag))
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	id := strings.TrimSpace(out)
	out, _, _ = jcli(t, env, "ps", "--all", "--json")
	var jobs []procregistry.Info
	json.Unmarshal([]byte(out), &jobs)
	if len(jobs) != 1 || jobs[0].Containment == "" {
		integration.Skip(t, "no container for jobs here: %s", out)
	}
	sleeps := func() []int {
		want := []byte("sleep\x00" + tag + "\x00")
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if pid, perr := strconv.Atoi(e.Name()); perr == nil && err == nil && bytes.Equal(b, want) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sleeps()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the escaped sleep %s never appeared", tag)
		}
		<-time.After(5 * time.Millisecond) // poll interval, bounded by deadline
	}
	if out, errs, code := jcli(t, env, "kill", id); code != 0 || out != id+" killed\n" {
		t.Fatalf("kill: %q %q exit %d", out, errs, code)
	}
	if left := sleeps(); len(left) != 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("the escaped sleep %s survived the kill: %v", tag, left)
	}
}

// TestJobs_CLIMemoryLimit: a job over its --memory limit is killed by the
// kernel inside its container, and wait says which limit killed it.
func TestJobs_CLIMemoryLimit(t *testing.T) {
	env := jobsEnv(t)
	hog := `head -c 600000000 /dev/zero | tail -c 500000000 >/dev/null` // tail holds 500 MB
	out, errs, code := jcli(t, env, "start", "--memory", "64M", "--", hog)
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	id := strings.TrimSpace(out)
	out, _, code = jcli(t, env, "wait", "--timeout", "30s", id)
	if code == 0 || !strings.Contains(out, "memory limit") {
		t.Fatalf("wait: %q, exit %d; want a kill by the memory limit", out, code)
	}
}

// waitGone waits (bounded) until process pid has ended: gone, or a
// zombie its parent has not reaped yet. The daemon is nobody's child
// here (spawnDaemon detaches it), so it cannot be waited for.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if !testproc.Alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

// The job daemon is not the child of the command that started it (it is
// started through a first stage that exits), so a teardown that walks
// the starter's tree — a relay whose connection was cut, a sandbox
// command's end — cannot reach the daemon or its jobs.
func TestJobs_CLIDaemonNotStartersChild(t *testing.T) {
	env := jobsEnv(t)
	if _, errs, code := jcli(t, env, "ps"); code != 0 {
		t.Fatalf("ps: exit %d: %s", code, errs)
	}
	pid, err := (&procregistry.Client{Path: daemonSocket(env["RUNBOX_STATE_DIR"])}).Ping(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PPid:\s+(\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no PPid in the daemon's status:\n%s", b)
	}
	if ppid, _ := strconv.Atoi(string(m[1])); ppid == os.Getpid() {
		t.Errorf("the daemon (%d) is the child of the command that started it (%d)", pid, ppid)
	}
}
