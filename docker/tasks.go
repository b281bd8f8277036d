package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/envs"
)

// Task is a persistent task's container, as [Tasks] finds it.
type Task struct {
	// Name is the task (the io.runbox.task label).
	Name string
	// Owner is the io.runbox.owner label.
	Owner string
	// ContainerID and ContainerName identify the container.
	ContainerID, ContainerName string
	// State is the engine's state: running, exited, created, ...
	State string
	// Created is when the container was made.
	Created time.Time
	// LastUsed is the latest of: the container's creation, start and
	// stop, and, while it runs, the last time an agent session began or
	// ended in it (each one makes and removes its state directory in
	// /dev/shm, which moves that directory's modification time). While
	// a process other than the container's own idle loop runs in it,
	// LastUsed is the time of the listing: the task is in use now.
	LastUsed time.Time
	// SizeBytes is what the container wrote on top of its image.
	SizeBytes int64
	// Busy names what runs in the container besides its idle loop (the
	// runbox agent of a session, background jobs); empty when nothing.
	Busy string
}

// taskFilter selects the persistent containers of owner ("" means the
// current user's, as [Options].Owner), and of task when it is not empty.
func taskFilter(owner, task string) filters.Args {
	if owner == "" {
		owner = currentUser()
	}
	f := filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelOwner+"="+owner),
		filters.Arg("label", LabelMode+"=persistent"),
	)
	if task != "" {
		f.Add("label", LabelTask+"="+task)
	}
	return f
}

// Tasks lists owner's persistent task containers ("" means the current
// user's): those --task and docker.persistent keep between runs.
// Ephemeral containers and a warm pool's are not tasks and are left out.
func Tasks(ctx context.Context, cli *client.Client, owner string) ([]Task, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Size: true, Filters: taskFilter(owner, "")})
	if err != nil {
		return nil, fmt.Errorf("docker: list task containers: %w", err)
	}
	now := time.Now()
	tasks := make([]Task, 0, len(list))
	for _, c := range list {
		t := Task{
			Name:        c.Labels[LabelTask],
			Owner:       c.Labels[LabelOwner],
			ContainerID: c.ID,
			State:       c.State,
			Created:     time.Unix(c.Created, 0),
			SizeBytes:   c.SizeRw,
		}
		if len(c.Names) > 0 {
			t.ContainerName = strings.TrimPrefix(c.Names[0], "/")
		}
		t.LastUsed = t.Created
		if err := lastUse(ctx, cli, &t, now); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// lastUse fills t.LastUsed and t.Busy from the engine. A container
// removed while it is looked at keeps what the listing said.
func lastUse(ctx context.Context, cli *client.Client, t *Task, now time.Time) error {
	ci, err := cli.ContainerInspect(ctx, t.ContainerID)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("docker: inspect task %s: %w", t.Name, err)
	}
	if ci.State != nil {
		for _, s := range []string{ci.State.StartedAt, ci.State.FinishedAt} {
			if at, err := time.Parse(time.RFC3339Nano, s); err == nil && at.After(t.LastUsed) {
				t.LastUsed = at
			}
		}
	}
	if ci.State == nil || !ci.State.Running {
		return nil
	}
	if at, ok := shmTime(ctx, cli, t.ContainerID); ok && at.After(t.LastUsed) {
		t.LastUsed = at
	}
	top, err := cli.ContainerTop(ctx, t.ContainerID, nil)
	if err != nil {
		return nil // stopped between the two calls: not in use
	}
	if t.Busy = busy(top); t.Busy != "" {
		t.LastUsed = now
	}
	return nil
}

// shmTime is the modification time of the container's /dev/shm: each
// agent session makes its state directory there and removes it at its
// end, so that time is when the last one began or ended. The engine's
// archive API sees the image's directory under the tmpfs, not the tmpfs,
// so the time is read with stat in the container (an image without stat
// gives no time: false).
func shmTime(ctx context.Context, cli *client.Client, id string) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	x, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: []string{"stat", "-c", "%Y", "/dev/shm"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return time.Time{}, false
	}
	hr, err := cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return time.Time{}, false
	}
	defer hr.Close()
	var out, errOut bytes.Buffer
	if err := demuxAll(io.LimitReader(hr.Reader, 4096), &out, &errOut); err != nil {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// busy says what runs in a task's container besides docker-init and the
// keepalive loop ("" when nothing does).
func busy(top container.TopResponse) string {
	col := -1
	for i, title := range top.Titles {
		if title == "CMD" || title == "COMMAND" {
			col = i
		}
	}
	if col < 0 {
		return ""
	}
	n, agent := 0, false
	for _, p := range top.Processes {
		if col >= len(p) {
			continue
		}
		cmd := p[col]
		if strings.Contains(cmd, "docker-init") || strings.Contains(cmd, keepalive) || cmd == "sleep 3600" {
			continue
		}
		n++
		agent = agent || strings.Contains(cmd, "runbox")
	}
	switch {
	case n == 0:
		return ""
	case agent:
		return fmt.Sprintf("%d processes, a runbox agent or job among them", n)
	default:
		return fmt.Sprintf("%d processes", n)
	}
}

// RemoveTask removes owner's ("" means the current user's) persistent
// containers of task, whatever they run, with their anonymous volumes,
// and returns their ids. A task with no container is an error that
// matches [envs.ErrNotFound].
func RemoveTask(ctx context.Context, cli *client.Client, owner, task string) ([]string, error) {
	if task == "" {
		return nil, fmt.Errorf("docker: remove task: no task named: %w", envs.ErrBadCommand)
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: taskFilter(owner, task)})
	if err != nil {
		return nil, fmt.Errorf("docker: remove task %s: list: %w", task, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("docker: task %s has no container: %w", task, envs.ErrNotFound)
	}
	var ids []string
	var errs []error
	for _, c := range list {
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove task %s: container %s: %w", task, short(c.ID), err))
			continue
		}
		ids = append(ids, c.ID)
	}
	return ids, errors.Join(errs...)
}
