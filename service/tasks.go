package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/modal"
)

// A task (runbox run --task T) keeps something alive between runs: a
// docker container left running, a modal snapshot, a kubernetes pod, a
// local task's workspace directory, a daytona sandbox, a directory on an
// ssh host. [Service.Tasks] lists them across backends,
// [Service.RemoveTask] removes one everywhere it lives and
// [Service.ReapTasks] removes those unused for longer than an age. A
// backend takes part through a [TaskKeeper]; one that has none is listed
// with the reason, so a user sees what runbox cannot show.

// TaskInfo is one backend's part of a task (docker: see
// [docker.Task].LastUsed for its last use).
type TaskInfo = envs.TaskInfo

// TaskKeeper is a backend's part of tasks ([envs.Provider].Tasks).
type TaskKeeper = envs.TaskKeeper

// TaskBackendState says whether a backend's tasks could be listed.
type TaskBackendState string

const (
	// TasksListed: the backend's tasks are in the listing.
	TasksListed TaskBackendState = "listed"
	// TasksUnavailable: the backend keeps tasks but could not be asked
	// now (no engine, no credentials); Detail says why.
	TasksUnavailable TaskBackendState = "unavailable"
	// TasksUnsupported: runbox cannot list or remove this backend's
	// tasks; Detail says what the task is there and how to remove it.
	TasksUnsupported TaskBackendState = "unsupported"
)

// TaskBackend is one backend's row in a [TaskList].
type TaskBackend struct {
	Backend string           `json:"backend"`
	State   TaskBackendState `json:"state"`
	Detail  string           `json:"detail,omitempty"`
}

// TaskList is what [Service.Tasks] found: the tasks, and for every
// backend whether it could be asked.
type TaskList struct {
	Tasks    []TaskInfo    `json:"tasks"`
	Backends []TaskBackend `json:"backends"`
}

// taskBackend is a backend that keeps tasks: its keeper, or, when it has
// none, the reason runbox cannot list its tasks.
type taskBackend struct {
	name   string
	keeper TaskKeeper
	reason string
}

// taskBackends are the backends that keep tasks, in the provider
// table's order.
func (s *Service) taskBackends() []taskBackend {
	var out []taskBackend
	for _, p := range s.providers.All() {
		if p.Tasks != nil || p.NoTasks != "" {
			out = append(out, taskBackend{name: p.Name, keeper: p.Tasks, reason: p.NoTasks})
		}
	}
	return out
}

// keeperFor returns backend's keeper, or an error saying why there is
// none.
func (s *Service) keeperFor(backend string) (TaskKeeper, error) {
	var names []string
	for _, b := range s.taskBackends() {
		names = append(names, b.name)
		if b.name != backend {
			continue
		}
		if b.keeper == nil {
			return nil, fmt.Errorf("service: tasks on %s: %s: %w", backend, b.reason, envs.ErrUnsupported)
		}
		return b.keeper, nil
	}
	return nil, fmt.Errorf("service: tasks: no backend %q keeps tasks (%s): %w", backend, strings.Join(names, ", "), envs.ErrBadCommand)
}

// Tasks lists every task on every backend that can say. A backend that
// cannot be asked now (no docker engine) is a row of the list, not an
// error: the others are still listed.
func (s *Service) Tasks(ctx context.Context) TaskList {
	list := TaskList{Tasks: []TaskInfo{}}
	for _, b := range s.taskBackends() {
		if b.keeper == nil {
			list.Backends = append(list.Backends, TaskBackend{Backend: b.name, State: TasksUnsupported, Detail: b.reason})
			continue
		}
		ts, err := b.keeper.Tasks(ctx)
		if err != nil {
			list.Backends = append(list.Backends, TaskBackend{Backend: b.name, State: TasksUnavailable, Detail: err.Error()})
			continue
		}
		list.Backends = append(list.Backends, TaskBackend{Backend: b.name, State: TasksListed})
		list.Tasks = append(list.Tasks, ts...)
	}
	slices.SortStableFunc(list.Tasks, func(a, b TaskInfo) int {
		return strings.Compare(a.Name+"\x00"+a.Backend, b.Name+"\x00"+b.Backend)
	})
	return list
}

// TaskRemoval is what [Service.RemoveTask] did: what it removed
// ("docker: container 3f2a…"), and the backends it could not ask when no
// backend was named (no docker engine): the task may still live there.
type TaskRemoval struct {
	Removed     []string      `json:"removed"`
	Unavailable []TaskBackend `json:"unavailable,omitempty"`
}

// RemoveTask removes task name from backend, or, when backend is "",
// from every backend that can list its tasks. A task found nowhere is an
// error that matches [envs.ErrNotFound]. With backend "", a backend that
// cannot be asked now is a row of the removal's Unavailable, as it is of
// [Service.Tasks]' listing, and an error only when nothing was removed
// anywhere: removing a local task must not fail because no docker
// engine runs. A named backend that fails is always an error.
func (s *Service) RemoveTask(ctx context.Context, name, backend string) (TaskRemoval, error) {
	out := TaskRemoval{Removed: []string{}}
	if name == "" {
		return out, fmt.Errorf("service: remove task: no task named: %w", envs.ErrBadCommand)
	}
	keepers, err := s.removalKeepers(backend)
	if err != nil {
		return out, err
	}
	var errs []error
	for _, k := range keepers {
		what, err := k.keeper.RemoveTask(ctx, name)
		for _, w := range what {
			out.Removed = append(out.Removed, k.name+": "+w)
		}
		switch {
		case err == nil || errors.Is(err, envs.ErrNotFound):
		case backend == "":
			out.Unavailable = append(out.Unavailable, TaskBackend{Backend: k.name, State: TasksUnavailable, Detail: err.Error()})
			errs = append(errs, err)
		default:
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil && (backend != "" || len(out.Removed) == 0) {
		return out, fmt.Errorf("service: remove task %s: %w", name, err)
	}
	if len(out.Removed) == 0 {
		return out, fmt.Errorf("service: task %s: none of its backends keeps anything of it: %w", name, envs.ErrNotFound)
	}
	return out, nil
}

// removalKeepers are the keepers RemoveTask asks: backend's, or every
// backend's that has one when backend is "".
func (s *Service) removalKeepers(backend string) ([]taskBackend, error) {
	if backend != "" {
		k, err := s.keeperFor(backend)
		if err != nil {
			return nil, err
		}
		return []taskBackend{{name: backend, keeper: k}}, nil
	}
	var keepers []taskBackend
	for _, b := range s.taskBackends() {
		if b.keeper != nil {
			keepers = append(keepers, b)
		}
	}
	return keepers, nil
}

// IdleTasks are the tasks of list last used longer than maxIdle before
// now: those the reaper removes. A task whose last use is unknown, or in
// which something runs, is never idle.
func IdleTasks(list []TaskInfo, maxIdle time.Duration, now time.Time) []TaskInfo {
	var idle []TaskInfo
	for _, t := range list {
		if t.LastUsed.IsZero() || t.Busy != "" || now.Sub(t.LastUsed) < maxIdle {
			continue
		}
		idle = append(idle, t)
	}
	return idle
}

// ReapTasks removes the tasks [IdleTasks] names for maxIdle, and returns
// those it removed. maxIdle must be positive.
func (s *Service) ReapTasks(ctx context.Context, maxIdle time.Duration) ([]TaskInfo, error) {
	if maxIdle <= 0 {
		return nil, fmt.Errorf("service: reap tasks: the idle age must be positive, not %s: %w", maxIdle, envs.ErrBadCommand)
	}
	var reaped []TaskInfo
	var errs []error
	for _, t := range IdleTasks(s.Tasks(ctx).Tasks, maxIdle, time.Now()) {
		if _, err := s.RemoveTask(ctx, t.Name, t.Backend); err != nil && !errors.Is(err, envs.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, t)
	}
	return reaped, errors.Join(errs...)
}

// TaskReaper removes, every interval until ctx ends, the tasks unused
// for longer than the configuration's tasks.max_idle; it returns at once
// when that is zero (no reaper). The caller owns it: it runs in the
// caller's goroutine and returns when ctx is done.
func (s *Service) TaskReaper(ctx context.Context, interval time.Duration) {
	maxIdle := time.Duration(s.opts.Config.Tasks.MaxIdle)
	if maxIdle <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		reaped, err := s.ReapTasks(ctx, maxIdle)
		for _, r := range reaped {
			s.log.Info("task reaped", "task", r.Name, "backend", r.Backend, "last_used", r.LastUsed, "max_idle", maxIdle)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("task reaper", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ReapInterval is how often a long-lived runbox runs the task reaper for
// maxIdle: a tenth of it, between a minute and an hour.
func ReapInterval(maxIdle time.Duration) time.Duration {
	return min(max(maxIdle/10, time.Minute), time.Hour)
}

// dockerTasks is the docker backend's keeper: persistent containers
// labelled with their task and this user as owner.
type dockerTasks struct{}

func (dockerTasks) Tasks(ctx context.Context) ([]TaskInfo, error) {
	cli, err := docker.NewClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ts, err := docker.Tasks(ctx, cli, "")
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		size := t.SizeBytes
		out = append(out, TaskInfo{
			Name: t.Name, Backend: "docker", Created: t.Created, LastUsed: t.LastUsed,
			SizeBytes: &size, Holds: fmt.Sprintf("container %s (%s)", t.ContainerName, t.State), Busy: t.Busy,
		})
	}
	return out, nil
}

func (dockerTasks) RemoveTask(ctx context.Context, name string) ([]string, error) {
	cli, err := docker.NewClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ids, err := docker.RemoveTask(ctx, cli, "", name)
	what := make([]string, len(ids))
	for i, id := range ids {
		what[i] = "container " + id[:min(12, len(id))]
	}
	return what, err
}

var _ TaskKeeper = dockerTasks{}

// modalTasks is the modal backend's keeper: the snapshots recorded in
// runbox's state directory. Modal does not say when a snapshot was last
// restored, so its last use is unknown and the reaper keeps it.
type modalTasks struct{ s *Service }

func (m modalTasks) Tasks(ctx context.Context) ([]TaskInfo, error) {
	dir := m.s.stateDir()
	if dir == "" {
		return nil, errors.New("modal: no state directory to read snapshot records from (set RUNBOX_STATE_DIR or HOME)")
	}
	ts, err := modal.Tasks(dir)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, TaskInfo{Name: t.Task, Backend: "modal", Holds: "snapshot " + t.ImageID})
	}
	return out, nil
}

func (m modalTasks) RemoveTask(ctx context.Context, name string) ([]string, error) {
	dir := m.s.stateDir()
	if dir == "" {
		return nil, fmt.Errorf("modal: task %s: no state directory: %w", name, envs.ErrNotFound)
	}
	image, err := modal.RemoveTask(ctx, m.s.opts.Getenv, dir, name)
	if err != nil {
		return nil, err
	}
	return []string{"snapshot " + image}, nil
}

var _ TaskKeeper = modalTasks{}
