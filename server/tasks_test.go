package server_test

import (
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
)

// taskContainers are the ids of the containers labelled with task.
func taskContainers(t *testing.T, task string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label=io.runbox.task="+task).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// TestTasksTool_ListAndRemove: the tasks tool lists a docker task's
// container (one carrying the labels the docker backend gives a --task
// container) and rm leaves none of it behind; the server's own task is
// not removed from under its sessions.
func TestTasksTool_ListAndRemove(t *testing.T) {
	const image = "runbox-test-busybox:latest"
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		integration.Skip(t, "no docker engine or image %s: %v", image, err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf("mcp-tasks-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		for _, id := range taskContainers(t, task) {
			exec.Command("docker", "rm", "-f", id).Run()
		}
	})
	out, err := exec.CommandContext(t.Context(), "docker", "run", "-d",
		"--label", "io.runbox.managed=true", "--label", "io.runbox.owner="+u.Username,
		"--label", "io.runbox.task="+task, "--label", "io.runbox.mode=persistent",
		"--name", "runbox-"+task, image, "sleep", "600").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}

	srv, _ := newServer(t, func(o *server.Options) {
		o.Spec = envs.Spec{Settings: map[string]string{service.SettingTask: "the-servers-own"}}
	})
	cs := connect(t, srv, nil)
	list, txt := mustOK(t, cs, "tasks", map[string]any{"action": "list"})
	tasks, _ := list["tasks"].([]any)
	var found map[string]any
	for _, x := range tasks {
		if m, _ := x.(map[string]any); m["name"] == task {
			found = m
		}
	}
	if found == nil || found["backend"] != "docker" || !strings.Contains(fmt.Sprint(found["holds"]), "runbox-"+task) || found["busy"] == nil {
		t.Fatalf("tasks list = %v; want %s on docker, held by its container, busy with its sleep", list, task)
	}
	if !strings.Contains(txt, task) || !strings.Contains(txt, "ssh: unsupported") {
		t.Errorf("list text = %q; want the task and the backends that cannot be listed", txt)
	}

	if res := call(t, cs, "tasks", map[string]any{"action": "rm", "task": "the-servers-own"}); !res.IsError || !strings.Contains(text(res), "this server's sessions") {
		t.Errorf("rm of the server's own task = %q (error %v); want a refusal", text(res), res.IsError)
	}
	if res := call(t, cs, "tasks", map[string]any{"action": "rm"}); !res.IsError {
		t.Errorf("rm without a task succeeded: %q", text(res))
	}

	rm, _ := mustOK(t, cs, "tasks", map[string]any{"action": "rm", "task": task})
	if rm["task"] != task || len(rm["removed"].([]any)) != 1 {
		t.Errorf("rm = %v; want one container removed", rm)
	}
	if ids := taskContainers(t, task); len(ids) != 0 {
		t.Fatalf("containers of %s after the tasks tool's rm: %v; want none", task, ids)
	}
	if res := call(t, cs, "tasks", map[string]any{"action": "rm", "task": task}); !res.IsError {
		t.Errorf("a second rm succeeded: %q", text(res))
	}
}
