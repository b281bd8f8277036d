package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// A task's workspace (runbox run --task T --sync DIR, then runbox sync)
// lives in an environment opened through the provider table, on any
// backend that can move files:
//   - a backend that keeps an environment per task ([envs.Provider]
//     TaskEnvs: a container, a sandbox, a pod): the task's own, at
//     [workspace.DefaultRemote];
//   - a backend on this machine (OnThisMachine): a directory of the
//     task's own beside runbox's state directory (runbox-tasks/NAME), so
//     that nothing else is replaced;
//   - any other (ssh): the directory the caller names (runbox run
//     --sync-to), else [workspace.DefaultRemote] on that machine.
//
// Where a task was pushed (its backend and the spec's host settings) is
// recorded beside its manifest, so that sync diff and apply reopen the
// same environment without being told again.

// taskPlace is what is recorded of where a task's workspace is.
type taskPlace struct {
	Backend  string            `json:"backend"`
	Host     string            `json:"host,omitempty"`
	Image    string            `json:"image,omitempty"`
	Dir      string            `json:"dir"`
	Settings map[string]string `json:"settings,omitempty"`
}

// legacySyncBackend is where a task pushed before its place was
// recorded lives: the only backend that synced then.
const legacySyncBackend = "docker"

// TaskPlace says where task's workspace is on backend: the spec that
// opens its environment and the directory the workspace is pushed to
// there, which a first push replaces. On this machine the returned
// spec.Dir is the task's own directory, which TaskPlace makes (the
// environment must be able to enter it before the first push fills it);
// elsewhere spec.Dir is left as it was, and the caller gives the command
// Dir: remote when it is empty (an environment does not start in
// remote: a tar fallback runs in the environment's directory after a
// first push moved remote aside). remote, when not empty, names that
// directory (absolute; not on this machine, where the task's own
// directory is used).
func (s *Service) TaskPlace(backend, task, stateDir, remote string, spec envs.Spec) (envs.Spec, string, error) {
	p, err := s.providers.Lookup(backend)
	if err != nil {
		return spec, "", err
	}
	settings := maps.Clone(spec.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	switch {
	case p.TaskEnvs:
		settings[SettingTask] = task
	case p.OnThisMachine:
		if remote != "" {
			return spec, "", fmt.Errorf("service: task %s: the %s backend keeps a task's workspace in a directory of its own: %w", task, backend, envs.ErrUnsupported)
		}
		// Beside runbox's state directory, not in it: the gate and the
		// sandbox keep commands out of runbox's own files.
		remote = filepath.Join(filepath.Dir(stateDir), "runbox-tasks", workspace.TaskFileName(task))
		if err := os.MkdirAll(remote, 0o700); err != nil {
			return spec, "", fmt.Errorf("service: task %s: %w", task, err)
		}
		spec.Dir = cmp.Or(spec.Dir, remote)
	}
	spec.Settings = settings
	return spec, cmp.Or(remote, workspace.DefaultRemote), nil
}

// PushTask pushes o.Dir to the task's workspace, remote, in env (opened
// on backend with spec, as TaskPlace made them) and records where it
// went. On this machine the push goes through an environment of its own
// (see below).
func (s *Service) PushTask(ctx context.Context, env envs.Environment, backend string, spec envs.Spec, remote string, o workspace.Options) (*workspace.PushReport, error) {
	o.Remote = remote
	if s.onThisMachine(backend) {
		// A first push replaces the task's directory itself, which a
		// command confined to it as its workspace may not remove: the
		// push runs with the tasks directory as its workspace.
		pushSpec := spec
		pushSpec.Dir = filepath.Dir(remote)
		penv, err := s.providers.Open(ctx, backend, pushSpec)
		if err != nil {
			return nil, err
		}
		defer penv.Close(context.WithoutCancel(ctx))
		env = penv
	}
	rep, err := workspace.Push(ctx, env, o)
	if err != nil {
		return rep, err
	}
	place := taskPlace{Backend: backend, Host: spec.Host, Image: spec.Image, Dir: remote, Settings: spec.Settings}
	b, err := json.Marshal(place)
	if err != nil {
		return rep, fmt.Errorf("service: task %s: %w", o.Task, err)
	}
	if err := os.WriteFile(placePath(o.StateDir, o.Task), b, 0o600); err != nil {
		return rep, fmt.Errorf("service: task %s: recording where it was pushed: %w", o.Task, err)
	}
	return rep, nil
}

func placePath(stateDir, task string) string {
	return filepath.Join(stateDir, "sync", workspace.TaskFileName(task)+".where.json")
}

// OpenTask opens, through the provider table, the environment task's
// workspace was pushed to. A task pushed before its place was recorded
// is the docker task's container it always was then; image, when not
// empty, is the image to make that container from should it be gone.
func (s *Service) OpenTask(ctx context.Context, stateDir, task, image string) (envs.Environment, error) {
	var place taskPlace
	b, err := os.ReadFile(placePath(stateDir, task))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Before places were recorded, only docker synced tasks.
		place = taskPlace{Backend: legacySyncBackend, Settings: map[string]string{SettingTask: task}}
	case err != nil:
		return nil, fmt.Errorf("service: task %s: %w", task, err)
	default:
		if err := json.Unmarshal(b, &place); err != nil {
			return nil, fmt.Errorf("service: task %s: where it was pushed: %w", task, err)
		}
	}
	spec := envs.Spec{Host: place.Host, Image: place.Image, Dir: place.Dir, Settings: place.Settings}
	if image != "" {
		spec.Image = image
	}
	if s.onThisMachine(place.Backend) {
		spec.Sandbox = "read-only" // a comparison only reads
	}
	return s.open(ctx, place.Backend, spec)
}

// onThisMachine reports whether backend's commands run on this machine.
func (s *Service) onThisMachine(backend string) bool { return s.providers.OnThisMachine(backend) }
