package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// TestTasks_ListBusyRemove: a persistent task's container is listed with
// its size and last use, an ephemeral container is not, a process running
// in the task shows it busy, and RemoveTask leaves no container of the
// task behind (a second RemoveTask finds nothing). Without this, a task
// kept by --task could only be found and removed with docker rm -f.
func TestTasks_ListBusyRemove(t *testing.T) {
	cli := engine(t, debianImage)
	ctx := t.Context()
	// An owner of its own: the listing of other tests' and users' tasks
	// is no business of this test.
	owner := fmt.Sprintf("tasks-test-%d", time.Now().UnixNano())
	task := "t1"
	t.Cleanup(func() {
		f := filters.NewArgs(filters.Arg("label", docker.LabelOwner+"="+owner))
		list, _ := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
		for _, c := range list {
			cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})

	kept := open(t, docker.Options{Image: debianImage, Owner: owner, Task: task, Persistent: true, KeepRunning: true})
	mustRun(t, kept, "head -c 100000 /dev/zero >/root/blob")
	id := kept.ContainerID()
	if err := kept.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	eph := open(t, docker.Options{Image: debianImage, Owner: owner, Task: "passing"})
	mustRun(t, eph, "true")

	tasks, err := docker.Tasks(ctx, cli, owner)
	if err != nil {
		t.Fatalf("Tasks: %v", err)
	}
	if len(tasks) != 1 {
		t.Fatalf("Tasks = %+v; want only the persistent task %s", tasks, task)
	}
	got := tasks[0]
	if got.Name != task || got.ContainerID != id || got.State != "running" || got.Owner != owner {
		t.Errorf("Tasks()[0] = %+v; want task %s, container %s, running", got, task, id)
	}
	if got.SizeBytes < 100000 {
		t.Errorf("SizeBytes = %d; want at least the 100000 bytes written", got.SizeBytes)
	}
	if got.LastUsed.Before(got.Created) || got.LastUsed.After(time.Now().Add(time.Minute)) {
		t.Errorf("LastUsed = %v, Created %v; want between creation and now", got.LastUsed, got.Created)
	}
	if got.Busy != "" {
		t.Errorf("Busy = %q with no session attached; want empty", got.Busy)
	}

	// Something running in the task's container makes it busy.
	if out, err := exec.CommandContext(ctx, "docker", "exec", "-d", id, "sleep", "600").CombinedOutput(); err != nil {
		t.Fatalf("docker exec -d: %v: %s", err, out)
	}
	tasks, err = docker.Tasks(ctx, cli, owner)
	if err != nil || len(tasks) != 1 || tasks[0].Busy == "" {
		t.Fatalf("Tasks with a process running = %+v, %v; want the task busy", tasks, err)
	}

	ids, err := docker.RemoveTask(ctx, cli, owner, task)
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("RemoveTask = %v, %v; want [%s]", ids, err, id)
	}
	f := filters.NewArgs(filters.Arg("label", docker.LabelOwner+"="+owner), filters.Arg("label", docker.LabelTask+"="+task))
	left, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil || len(left) != 0 {
		t.Fatalf("containers of task %s after RemoveTask: %d (%v); want none", task, len(left), err)
	}
	if _, err := docker.RemoveTask(ctx, cli, owner, task); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("second RemoveTask: %v; want envs.ErrNotFound", err)
	}
	if _, err := cli.ContainerInspect(ctx, eph.ContainerID()); err != nil {
		t.Errorf("the ephemeral container went with the task: %v", err)
	}
}
