package service

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// What runbox bench measures of the docker backend needs the backend
// below the provider table (a container made and removed per command, a
// warm pool of its own); it is offered here so that front ends import
// no backend.

// DockerTaskLabel is the label that names the task of the containers the
// docker backend makes (a bench run sweeps its own by it).
const DockerTaskLabel = docker.LabelTask

// OpenContainer makes a container of image for task, removed on Close
// (stop bounds its stop), and returns it with its id: unlike a session's,
// it is never kept running for the task.
func (s *Service) OpenContainer(ctx context.Context, image, task string, stop time.Duration) (envs.Environment, string, error) {
	env, err := docker.New(ctx, docker.Options{Image: image, Task: task, Logger: s.log, StopTimeout: stop})
	if err != nil {
		return nil, "", err
	}
	return env, env.ContainerID(), nil
}

// WarmContainers is a warm pool of containers of one image, as the
// server keeps (docker.pool), for measuring what it saves.
type WarmContainers struct {
	pool *docker.Pool
	opts docker.Options
	cli  *client.Client
	size int
}

// NewWarmContainers starts a pool keeping size containers of image for
// task ready. Close removes them.
func (s *Service) NewWarmContainers(ctx context.Context, image, task string, size int) (*WarmContainers, error) {
	pool, err := docker.NewPool(ctx, docker.PoolOptions{Size: size, Task: task, Logger: s.log})
	if err != nil {
		return nil, err
	}
	w := &WarmContainers{pool: pool, size: size, opts: docker.Options{Image: image, Task: task, Logger: s.log, StopTimeout: time.Second}}
	if err := pool.Warm(w.opts); err != nil {
		w.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if w.cli, err = docker.NewClient(); err != nil {
		w.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

// Open takes a ready container (or makes one when none is).
func (w *WarmContainers) Open(ctx context.Context) (envs.Environment, error) {
	return w.pool.New(ctx, w.opts)
}

// WaitQuiet waits until the pool holds its ready containers and nothing
// else of it is left (the container handed out last is removed), within
// a bound that only catches a pool that never fills.
func (w *WarmContainers) WaitQuiet(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	f := filters.NewArgs(filters.Arg("label", docker.LabelPool+"="+w.pool.ID()))
	for {
		if w.pool.Idle(w.opts) >= w.size {
			list, err := w.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
			if err != nil {
				return fmt.Errorf("service: listing the pool's containers: %w", err)
			}
			if len(list) == w.size {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service: the pool was not ready and quiet within 2 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close removes the pool's containers.
func (w *WarmContainers) Close(ctx context.Context) error {
	if w.cli != nil {
		w.cli.Close()
	}
	return w.pool.Close(ctx)
}
