package main

import (
	"context"
	"fmt"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// registerDocker adds the docker backend to t. Spec.Image (or the
// configured docker.image) is required; Spec.Dir is the directory in the
// container; Spec.Limits and Spec.Network apply to the whole container;
// Spec.Env travels with each command, never in the container's config.
func (a *app) registerDocker(t *envs.Providers) {
	t.Register(envs.Provider{
		Name:        "docker",
		Description: "a container per task (docker engine), with the runbox agent inside",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			return docker.New(ctx, a.dockerOptions(spec))
		},
		Check: func(ctx context.Context) error {
			cli, err := docker.NewClient()
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v, err := cli.ServerVersion(ctx)
			if err != nil {
				return fmt.Errorf("docker: engine not reachable: %w", err)
			}
			a.log.Debug("docker engine", "version", v.Version, "api", v.APIVersion, "negotiated", cli.ClientVersion())
			return nil
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return docker.Capabilities(a.dockerOptions(spec))
		},
	})
}

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
