package bench

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

// warmPool is a warm pool of containers of one image, as the server
// keeps (docker.Pool), for measuring what it saves. It is the docker
// backend's own pool, below the provider table: a measurement must be
// able to wait until the pool is full and quiet, which no session asks.
type warmPool struct {
	pool *docker.Pool
	opts docker.Options
	cli  *client.Client
	size int
}

// newWarmPool starts a pool keeping size containers of image for task
// ready. close removes them.
func newWarmPool(ctx context.Context, h Host, image, task string, size int) (*warmPool, error) {
	pool, err := docker.NewPool(ctx, docker.PoolOptions{Size: size, Task: task, Logger: h.logger()})
	if err != nil {
		return nil, err
	}
	w := &warmPool{pool: pool, size: size, opts: docker.Options{Image: image, Task: task, Logger: h.logger(), StopTimeout: time.Second}}
	if err := pool.Warm(w.opts); err != nil {
		w.close(context.WithoutCancel(ctx))
		return nil, err
	}
	if w.cli, err = docker.NewClient(); err != nil {
		w.close(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

// open takes a ready container (or makes one when none is).
func (w *warmPool) open(ctx context.Context) (envs.Environment, error) {
	return w.pool.New(ctx, w.opts)
}

// waitQuiet waits until the pool holds its ready containers and nothing
// else of it is left (the container handed out last is removed), within
// a bound that only catches a pool that never fills.
func (w *warmPool) waitQuiet(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	f := filters.NewArgs(filters.Arg("label", docker.LabelPool+"="+w.pool.ID()))
	for {
		if w.pool.Idle(w.opts) >= w.size {
			list, err := w.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
			if err != nil {
				return fmt.Errorf("bench: listing the pool's containers: %w", err)
			}
			if len(list) == w.size {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the pool was not ready and quiet within 2 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// close removes the pool's containers.
func (w *warmPool) close(ctx context.Context) error {
	if w.cli != nil {
		w.cli.Close()
	}
	return w.pool.Close(ctx)
}
