package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/service"
)

// dockerTaskContainers are the ids of every container, running or not,
// labelled with task.
func dockerTaskContainers(t *testing.T, task string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label=io.runbox.task="+task).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// TestTasks_DockerRunListRemove: the check — `runbox tasks`
// lists a docker task made by `runbox run --task`, and `runbox tasks rm`
// leaves no container of it behind; removing it again is an error, and
// the listing no longer shows it.
func TestTasks_DockerRunListRemove(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	task := fmt.Sprintf("cli-tasks-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		for _, id := range dockerTaskContainers(t, task) {
			exec.Command("docker", "rm", "-f", id).Run()
		}
	})
	env := map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}
	if _, stderr, code := cli(t, "", env, "run", "--sandbox", "off", "--backend", "docker", "--image", image, "--task", task, "--", "true"); code != 0 {
		t.Fatalf("run --task: exit %d: %s", code, stderr)
	}
	if ids := dockerTaskContainers(t, task); len(ids) != 1 {
		t.Fatalf("containers of task %s after run --task: %v; want one (the control: --task keeps one)", task, ids)
	}

	out, stderr, code := cli(t, "", env, "tasks", "--json")
	if code != 0 {
		t.Fatalf("tasks --json: exit %d: %s", code, stderr)
	}
	var list service.TaskList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tasks --json: %v: %s", err, out)
	}
	var found *service.TaskInfo
	for i, ti := range list.Tasks {
		if ti.Name == task {
			found = &list.Tasks[i]
		}
	}
	if found == nil || found.Backend != "docker" || !strings.Contains(found.Holds, "runbox-"+task) || found.LastUsed.IsZero() || found.SizeBytes == nil {
		t.Fatalf("tasks --json = %s; want task %s on docker held by its container, with last use and size", out, task)
	}
	states := map[string]service.TaskBackendState{}
	for _, b := range list.Backends {
		states[b.Backend] = b.State
	}
	if states["docker"] != service.TasksListed || states["ssh"] != service.TasksUnsupported {
		t.Errorf("backends = %+v; want docker listed and ssh unsupported with its reason", list.Backends)
	}
	if out, _, _ := cli(t, "", env, "tasks"); !strings.Contains(out, task) || !strings.Contains(out, "LAST USE") {
		t.Errorf("tasks table does not show %s:\n%s", task, out)
	}

	out, stderr, code = cli(t, "", env, "tasks", "rm", task)
	if code != 0 || !strings.Contains(out, "docker: container") {
		t.Fatalf("tasks rm: exit %d, stdout %q, stderr %q; want the container named", code, out, stderr)
	}
	if ids := dockerTaskContainers(t, task); len(ids) != 0 {
		t.Fatalf("containers of task %s after tasks rm: %v; want none", task, ids)
	}
	if out, _, _ := cli(t, "", env, "tasks", "--json"); strings.Contains(out, task) {
		t.Errorf("tasks --json still lists %s after rm: %s", task, out)
	}
	if _, stderr, code := cli(t, "", env, "tasks", "rm", task); code == 0 || !strings.Contains(stderr, task) {
		t.Errorf("second tasks rm: exit %d, stderr %q; want a failure naming the task", code, stderr)
	}
}

// TestTasks_BadUse: the mistakes a user can make are refused with a
// usage status and what to do, before any backend is asked.
func TestTasks_BadUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"reap without an age", []string{"tasks", "reap"}, "--max-idle"},
		{"rm without a task", []string{"tasks", "rm"}, "arg"},
		{"rm on a backend that keeps none", []string{"tasks", "rm", "x", "--backend", "vercel"}, "no backend"},
		{"rm on a backend runbox cannot clear", []string{"tasks", "rm", "x", "--backend", "ssh"}, "remote directories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := cli(t, "", map[string]string{"RUNBOX_STATE_DIR": t.TempDir()}, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("runbox %v: exit %d, stderr %q; want a failure saying %q", tc.args, code, stderr, tc.want)
			}
		})
	}
}
