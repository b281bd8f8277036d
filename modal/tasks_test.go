package modal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/modal"
)

// TestTasks_ListAndRemoveSnapshot: a persistent task's snapshot is
// listed from the state directory, and RemoveTask deletes its image on
// Modal and its record, so the task's next sandbox starts from the base
// image (the file written before is gone); removing it again finds
// nothing.
func TestTasks_ListAndRemoveSnapshot(t *testing.T) {
	srv := fake(t, 0)
	o := options(t, srv)
	o.Persistent, o.Task, o.StateDir = true, "kept-7", t.TempDir()
	env := open(t, o)
	run(t, env, "echo x > f")
	if err := env.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}

	tasks, err := modal.Tasks(o.StateDir)
	if err != nil || len(tasks) != 1 || tasks[0].Task != "kept-7" || !strings.HasPrefix(tasks[0].ImageID, "im-") {
		t.Fatalf("Tasks = %+v, %v; want kept-7 with its snapshot image", tasks, err)
	}
	image := tasks[0].ImageID
	if !srv.HasImage(image) {
		t.Fatalf("the fake has no image %s before removal (the control)", image)
	}
	got, err := modal.RemoveTask(t.Context(), o.Getenv, o.StateDir, "kept-7")
	if err != nil || got != image {
		t.Fatalf("RemoveTask = %q, %v; want %s", got, err, image)
	}
	if srv.HasImage(image) {
		t.Errorf("snapshot image %s still on Modal after RemoveTask", image)
	}
	if tasks, err := modal.Tasks(o.StateDir); err != nil || len(tasks) != 0 {
		t.Errorf("Tasks after RemoveTask = %+v, %v; want none", tasks, err)
	}
	if _, err := modal.RemoveTask(t.Context(), o.Getenv, o.StateDir, "kept-7"); !errors.Is(err, envs.ErrNotFound) {
		t.Errorf("second RemoveTask: %v; want envs.ErrNotFound", err)
	}
	env = open(t, o)
	defer env.Close(context.Background())
	if res := run(t, env, "test -e f; echo $?"); strings.TrimSpace(res.Output) != "1" {
		t.Errorf("the task's next sandbox still has the removed snapshot's file (test -e f: %q)", res.Output)
	}
}
