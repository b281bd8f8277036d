package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/service"
)

// TestService_DockerPool: a long-lived Service with docker.pool keeps
// containers ready, a docker session's environment is one of them, and
// Close leaves none of the pool's containers. A one-shot Service keeps no
// pool (it would only throw it away).
func TestService_DockerPool(t *testing.T) {
	const image = "runbox-test-busybox:latest"
	cli, err := docker.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	_, perr := cli.ImageInspect(ctx, image)
	cancel()
	if perr != nil {
		integration.Skip(t, "no docker engine or no image %s: %v", image, perr)
	}
	cfg := config.Default()
	cfg.Approval.Mode = "off"
	cfg.Docker.Image, cfg.Docker.Pool = image, 1
	if s := newService(t, cfg); s.DockerPool() != nil {
		t.Fatalf("a Service without WarmPool keeps a docker pool")
	}
	s, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }, WarmPool: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	pool := s.DockerPool()
	if pool == nil {
		t.Fatal("no docker pool with WarmPool and docker.pool 1")
	}
	if err := s.WarmDocker(envs.Spec{}); err != nil {
		t.Fatal(err)
	}
	o := s.DockerOptions(envs.Spec{})
	deadline := time.Now().Add(3 * time.Minute)
	for pool.Idle(o) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pool made no ready container in 3 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ready := poolContainers(t, cli, pool)
	ss, err := s.NewSession(service.SessionOptions{Backend: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ss.Run(t.Context(), envs.Command{Shell: "hostname"})
	if err != nil || res.Code != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(ready) != 1 || len(res.Output) < 12 || ready[0][:12] != res.Output[:12] {
		t.Errorf("the session ran in %q; want the ready container %v", res.Output, ready)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := poolContainers(t, cli, pool); len(left) != 0 {
		t.Errorf("pool containers left after Close: %v", left)
	}
}

func poolContainers(t *testing.T, cli *client.Client, p *docker.Pool) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelPool+"="+p.ID()))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}
