package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// benchDockerCases measures the docker backend against the docker CLI in
// the same run: `true` through runbox's agent versus `docker exec CONTAINER
// true` on the same container, and container create-to-first-command
// versus `docker run -d` + `docker exec`.
func benchDockerCases(a *app) []benchCase {
	image := firstNonEmpty(a.cfg.Docker.Image, "runbox-test-debian:bookworm")
	return []benchCase{
		{
			name: "docker-exec-true", backend: "docker", baseline: "docker exec CONTAINER true",
			setup: func(ctx context.Context) (op, base func(context.Context) error, cleanup func(), err error) {
				env, err := docker.New(ctx, docker.Options{Image: image, Logger: a.log})
				if err != nil {
					return nil, nil, nil, err
				}
				id := env.ContainerID()
				op = func(ctx context.Context) error {
					res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
					if err == nil && res.Code != 0 {
						err = fmt.Errorf("true exited %d", res.Code)
					}
					return err
				}
				base = func(ctx context.Context) error {
					return exec.CommandContext(ctx, "docker", "exec", id, "true").Run()
				}
				return op, base, func() { env.Close(context.Background()) }, nil
			},
		},
		{
			name: "docker-create-to-first-command", backend: "docker", baseline: "docker run -d + docker exec",
			maxN: 20, // each run creates and removes a container
			setup: func(ctx context.Context) (op, base func(context.Context) error, cleanup func(), err error) {
				op = func(ctx context.Context) error {
					env, err := docker.New(ctx, docker.Options{Image: image, Logger: a.log, StopTimeout: time.Second})
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					_, err = env.Run(ctx, envs.Command{Args: []string{"true"}})
					return err
				}
				base = func(ctx context.Context) error {
					out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--entrypoint", "/bin/sh", image, "-c", "while :; do sleep 3600; done").Output()
					if err != nil {
						return err
					}
					id := string(out[:len(out)-1])
					defer exec.Command("docker", "rm", "-f", id).Run()
					return exec.CommandContext(ctx, "docker", "exec", id, "true").Run()
				}
				return op, base, func() {}, nil
			},
		},
	}
}
