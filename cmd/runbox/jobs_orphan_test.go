package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// jobInfo is the job's entry in `ps --all --json`.
func jobInfo(t *testing.T, env map[string]string, id string) procregistry.Info {
	t.Helper()
	out, errs, code := jcli(t, env, "ps", "--all", "--json")
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, errs)
	}
	var jobs []procregistry.Info
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		t.Fatalf("ps --json: %v: %q", err, out)
	}
	for _, j := range jobs {
		if j.ID == id {
			return j
		}
	}
	t.Fatalf("job %s not in ps: %s", id, out)
	return procregistry.Info{}
}

// cgroupDirsNamed finds directories called name anywhere under
// /sys/fs/cgroup.
func cgroupDirsNamed(name string) []string {
	var found []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == name {
			found = append(found, p)
			return fs.SkipDir
		}
		return nil
	})
	return found
}

// A supervisor SIGKILLed while its job prints leaves the job running:
// ps says running for as long as it prints, `logs -f` started before the
// kill gets every line and ends when the job does, `wait` returns the
// job's exit code, and no cgroup of the job is left. Breaks if a dead
// supervisor ends the job (it used to be "lost" at once, with the rest of
// its output unread and its exit code never recorded). ps says the
// supervisor died, plain as well as --json.
func TestJobs_CLISupervisorKilled(t *testing.T) {
	env := jobsEnv(t)
	const lines = 3000
	job := fmt.Sprintf(`for i in $(seq 1 %d); do echo "line $i"; case $((i %% 100)) in 0) sleep 0.1;; esac; done; exit 7`, lines)
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	out, errs, code := jcli(t, env, "start", "--", job)
	if code != 0 {
		t.Fatalf("start: exit %d, %s", code, errs)
	}
	id := strings.TrimSpace(out)

	type result struct {
		out  string
		code int
	}
	followed := make(chan result, 1)
	go func() {
		out, _, code := jcli(t, env, "logs", "-f", id)
		followed <- result{out, code}
	}()

	deadline := time.Now().Add(10 * time.Second)
	for out, _, _ := jcli(t, env, "logs", id); !strings.Contains(out, "line 100\n"); out, _, _ = jcli(t, env, "logs", id) {
		if time.Now().After(deadline) {
			t.Fatalf("the job printed only %q", out)
		}
	}
	in := jobInfo(t, env, id)
	sup := in.SupervisorPID
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", sup)); sup == 0 || !strings.Contains(string(cmdline), "__supervise") || !strings.Contains(string(cmdline), env["RUNBOX_STATE_DIR"]) {
		t.Fatalf("supervisor_pid %d is not the job's supervisor (%q)", sup, cmdline)
	}
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	// Status first, then the log: a log short of its last line means the
	// job was still printing when ps answered.
	running := 0
	deadline = time.Now().Add(30 * time.Second)
	for {
		st := jobInfo(t, env, id).Status
		out, _, _ := jcli(t, env, "logs", id)
		if strings.HasSuffix(out, fmt.Sprintf("line %d\n", lines)) {
			break
		}
		if st != procregistry.StatusRunning {
			t.Fatalf("ps says %s while the job still prints (%d bytes so far)", st, len(out))
		}
		running++
		if time.Now().After(deadline) {
			t.Fatal("the job never finished printing")
		}
	}
	if running == 0 {
		t.Fatal("never saw the job running after its supervisor was killed")
	}
	out, _, code = jcli(t, env, "wait", "--timeout", "30s", id)
	if code != 7 || !strings.Contains(out, "exited 7") {
		t.Errorf("wait: %q, exit %d; want exited 7, exit 7", out, code)
	}
	if w := jobInfo(t, env, id).Warning; !strings.Contains(w, "supervisor died") {
		t.Errorf("ps --json warning = %q; want it to say the supervisor died", w)
	}
	if _, errs, _ := jcli(t, env, "ps", "--all"); !strings.Contains(errs, "job "+id+": the supervisor died") {
		t.Errorf("plain ps does not warn that the supervisor died: %q", errs)
	}
	if out, _, _ := jcli(t, env, "logs", id); out != want.String() {
		t.Errorf("logs: %d bytes; want all %d lines (%d bytes)", len(out), lines, want.Len())
	}
	select {
	case f := <-followed:
		if f.out != want.String() || f.code != 0 {
			t.Errorf("logs -f: %d bytes, exit %d; want all %d lines (%d bytes), exit 0", len(f.out), f.code, lines, want.Len())
		}
	case <-time.After(30 * time.Second):
		t.Error("logs -f did not end with the job")
	}
	if dirs := cgroupDirsNamed("runbox-job-" + id); len(dirs) != 0 {
		t.Errorf("the job's cgroup outlived it: %v", dirs)
	}
}
