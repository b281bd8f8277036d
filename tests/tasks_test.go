package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runbox/runbox/service"
)

// TestTasks_LocalWorkspaceListedAndRemoved: a local task's workspace
// (run --backend local --task T --sync DIR) is a task like any other,
// through the binary as shipped: runbox tasks lists it with where it is,
// its size and last use, busy while a process works in it; tasks rm removes
// its directory and records (the user's own directory untouched), and a
// second rm is an error naming the task. No docker engine answers (as on
// a laptop without one): rm without --backend still removes the local
// task, says on stderr that docker could not be asked, and exits 0.
func TestTasks_LocalWorkspaceListedAndRemoved(t *testing.T) {
	u := users(t)[0]
	home := u.home(t)
	state := filepath.Join(home, "state")
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state, "DOCKER_HOST=unix://" + filepath.Join(home, "no-engine.sock")}
	dir := filepath.Join(home, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("my work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const task = "local-t1"
	if out, errOut, code := u.run(t, env, "run", "--backend", "local", "--task", task, "--sync", dir, "--", "cat mine.txt && echo made > made.txt"); code != 0 || out != "my work\n" {
		t.Fatalf("run --task --sync: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	list := func() (found *service.TaskInfo, listed service.TaskBackendState) {
		t.Helper()
		out, errOut, code := u.run(t, env, "tasks", "--json")
		var l service.TaskList
		if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil {
			t.Fatalf("tasks --json: exit %d, %v: %s %s", code, err, out, errOut)
		}
		for i, ti := range l.Tasks {
			if ti.Name == task && ti.Backend == "local" {
				found = &l.Tasks[i]
			}
		}
		for _, b := range l.Backends {
			if b.Backend == "local" {
				listed = b.State
			}
		}
		return found, listed
	}
	found, state1 := list()
	if found == nil || state1 != service.TasksListed {
		t.Fatalf("tasks --json: local %v, task %+v; want %s listed", state1, found, task)
	}
	where := strings.TrimPrefix(found.Holds, "directory ")
	if b, err := os.ReadFile(filepath.Join(where, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the task's workspace %q (holds %q): made.txt %q, %v", where, found.Holds, b, err)
	}
	if found.SizeBytes == nil || *found.SizeBytes == 0 || found.LastUsed.IsZero() || found.Busy != "" {
		t.Errorf("task %+v; want a size, a last use and not busy", found)
	}
	if out, _, _ := u.run(t, env, "tasks"); !strings.Contains(out, task) || !strings.Contains(out, "local") {
		t.Errorf("tasks table does not show %s:\n%s", task, out)
	}

	// A process working in it makes it busy, which the reaper leaves
	// alone (not run here: it would reap other tests' idle containers).
	sleeper := exec.Command("sleep", "300")
	sleeper.Dir = where
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	if found, _ := list(); found == nil || !strings.Contains(found.Busy, strconv.Itoa(sleeper.Process.Pid)) {
		t.Errorf("task with a process in it: %+v; want busy with process %d", found, sleeper.Process.Pid)
	}
	sleeper.Process.Kill()
	sleeper.Wait()

	out, errOut, code := u.run(t, env, "tasks", "rm", task)
	if code != 0 || !strings.Contains(out, "local: directory "+where) {
		t.Fatalf("tasks rm: exit %d, stdout %q, stderr %q; want the directory named", code, out, errOut)
	}
	if !strings.Contains(errOut, "docker could not be asked") {
		t.Errorf("tasks rm with no docker engine: stderr %q; want it to say docker could not be asked", errOut)
	}
	if _, err := os.Stat(where); !os.IsNotExist(err) {
		t.Errorf("the task's workspace after tasks rm: %v; want it gone", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mine.txt")); err != nil || string(b) != "my work\n" {
		t.Errorf("the user's own directory after tasks rm: %q, %v", b, err)
	}
	if found, _ := list(); found != nil {
		t.Errorf("tasks --json still lists %+v after rm", found)
	}
	if _, errOut, code := u.run(t, env, "tasks", "rm", task); code == 0 || !strings.Contains(errOut, task) {
		t.Errorf("second tasks rm: exit %d, stderr %q; want a failure naming the task", code, errOut)
	}
}
