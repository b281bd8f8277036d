package service

import (
	"context"
	"fmt"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// dockerProvider runs commands in a container per task. Spec.Image (or
// docker.image) is required; Spec.Dir is the directory in the container;
// Spec.Limits and Spec.Network apply to the whole container; Spec.Env
// travels with each command, never in the container's configuration.
func (s *Service) dockerProvider() envs.Provider {
	return envs.Provider{
		Name:        "docker",
		Description: "a container per task (docker engine), with the runbox agent inside",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			return docker.New(ctx, s.DockerOptions(spec))
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
			s.log.Debug("docker engine", "version", v.Version, "api", v.APIVersion, "negotiated", cli.ClientVersion())
			return nil
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return docker.Capabilities(s.DockerOptions(spec))
		},
	}
}

// DockerOptions are the docker backend's options for spec, from the
// configuration's docker section.
func (s *Service) DockerOptions(spec envs.Spec) docker.Options {
	c := s.opts.Config.Docker
	image := spec.Image
	if image == "" {
		image = c.Image
	}
	return docker.Options{
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
}
