package service

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// SettingTask is the [envs.Spec] setting that names a task: the docker
// backend then opens the task's own container, persistent and left
// running between commands (as the docker section's task and persistent
// would, for this spec alone).
const SettingTask = "task"

// DockerOptions are the docker backend's options for spec, from the
// configuration's docker section.
func (s *Service) DockerOptions(spec envs.Spec) docker.Options {
	c := s.opts.Config.Docker
	image := spec.Image
	if image == "" {
		image = c.Image
	}
	o := docker.Options{
		Image:        image,
		AgentBinary:  c.AgentBinary,
		Task:         c.Task,
		Persistent:   c.Persistent,
		ReadOnlyRoot: c.ReadOnlyRoot,
		Workspace:    spec.Settings["workspace"],
		Dir:          spec.Dir,
		Env:          spec.Env,
		Limits:       envs.Limits{MemoryBytes: spec.Limits.MemoryBytes, CPUs: spec.Limits.CPUs},
		PidsLimit:    spec.Limits.Pids, // zero: the backend's default cap
		Network:      spec.Network,
		Progress:     s.opts.Progress,
		Logger:       s.log,
	}
	if t := spec.Settings[SettingTask]; t != "" {
		o.Task, o.Persistent, o.KeepRunning = t, true, true
	}
	return o
}

// dockerProvider is the docker backend's row: from the warm pool when the
// Service keeps one.
func (s *Service) dockerProvider() envs.Provider {
	if s.pool != nil {
		return s.pool.Provider(s.DockerOptions)
	}
	return docker.Provider(s.DockerOptions)
}

// WarmDocker starts keeping docker containers ready for spec (the
// server's own spec, before its first session asks). Without a pool it
// does nothing; a spec that cannot be pooled (a task's persistent
// container) is an error.
func (s *Service) WarmDocker(spec envs.Spec) error {
	if s.pool == nil {
		return nil
	}
	if err := s.pool.Warm(s.DockerOptions(spec)); err != nil {
		return fmt.Errorf("docker pool: %w", err)
	}
	return nil
}

// DockerPool is the warm pool of docker containers the Service keeps
// (Options.WarmPool with docker.pool above zero); nil when it keeps none.
func (s *Service) DockerPool() *docker.Pool { return s.pool }

// closePool closes the warm pool, if any.
func (s *Service) closePool(ctx context.Context) error {
	if s.pool == nil {
		return nil
	}
	return s.pool.Close(ctx)
}
