package service

import (
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
