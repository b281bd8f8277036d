package main

import (
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// registerDocker adds the docker backend to t: one line, the backend's own
// provider over the options this configuration gives it.
func (a *app) registerDocker(t *envs.Providers) { t.Register(docker.Provider(a.dockerOptions)) }

// dockerOptions maps a spec and the configuration to the backend's
// options. Spec.Image (or the configured docker.image) is required;
// Spec.Dir is the directory in the container; Spec.Limits and Spec.Network
// apply to the whole container; Spec.Env travels with each command, never
// in the container's config.
func (a *app) dockerOptions(spec envs.Spec) docker.Options {
	return docker.Options{
		Image:        firstNonEmpty(spec.Image, a.cfg.Docker.Image),
		AgentBinary:  a.cfg.Docker.AgentBinary,
		Task:         a.cfg.Docker.Task,
		Persistent:   a.cfg.Docker.Persistent,
		ReadOnlyRoot: a.cfg.Docker.ReadOnlyRoot,
		Workspace:    spec.Settings["workspace"],
		Dir:          spec.Dir,
		Env:          spec.Env,
		Limits:       envs.Limits{MemoryBytes: spec.Limits.MemoryBytes, CPUs: spec.Limits.CPUs},
		PidsLimit:    spec.Limits.Pids, // zero: the backend's default cap
		Network:      spec.Network,
		Progress:     a.stderr,
		Logger:       a.log,
	}
}
