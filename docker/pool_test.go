package docker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// newPool makes a pool of size for the test, closed (and checked empty)
// at its end.
func newPool(t *testing.T, cli *client.Client, size int) *docker.Pool {
	t.Helper()
	p, err := docker.NewPool(t.Context(), docker.PoolOptions{Size: size, Client: cli, Task: "pool-test"})
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func poolOptions() docker.Options {
	return docker.Options{Image: busyboxImage, AgentBinary: agentBin, StopTimeout: time.Second}
}

// pooled lists the containers of pool p (any state).
func pooled(t *testing.T, cli *client.Client, p *docker.Pool) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelPool+"="+p.ID()))})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// waitIdle polls until p has n ready containers for o (a generous bound
// that only catches a pool that never fills).
func waitIdle(t *testing.T, p *docker.Pool, o docker.Options, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for p.Idle(o) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d ready containers after 2 minutes; want %d", p.Idle(o), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func poolNew(t *testing.T, p *docker.Pool, o docker.Options) *docker.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	e, err := p.New(ctx, o)
	if err != nil {
		t.Fatalf("Pool.New: %v", err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func labelsOf(t *testing.T, cli *client.Client, id string) map[string]string {
	t.Helper()
	ci, err := cli.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return ci.Config.Labels
}

// TestPool_HandsOutReadyAndReplaces: a warm pool hands out one of its
// containers, agent attached and fresh (the first command is no
// recreation, the caller's Env applies), and makes another to take its
// place. Without this the pool would be a one-shot cache.
func TestPool_HandsOutReadyAndReplaces(t *testing.T) {
	cli := engine(t, busyboxImage)
	p := newPool(t, cli, 1)
	o := poolOptions()
	if err := p.Warm(o); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, p, o, 1)
	ready := pooled(t, cli, p)
	o.Env = map[string]string{"POOL_TEST": "mine"}
	e := poolNew(t, p, o)
	if !slices.Contains(ready, e.ContainerID()) {
		t.Fatalf("Pool.New gave container %s; want the ready one of %v", e.ContainerID(), ready)
	}
	if e.Fallback() != "" {
		t.Fatalf("pooled environment without the agent: %s", e.Fallback())
	}
	res := mustRun(t, e, `echo "$POOL_TEST"; ls /tmp | wc -l`)
	if res.EnvironmentRecreated || res.Code != 0 || res.Output != "mine\n0\n" {
		t.Fatalf("first command in a pooled container = %+v; want the caller's env, a fresh /tmp, no recreation", res)
	}
	waitIdle(t, p, o, 1) // replaced
	if ids := pooled(t, cli, p); len(ids) != 2 {
		t.Fatalf("pool containers after a handout = %v; want the one out and its replacement", ids)
	}
}

// TestPool_CloseRemovesEverything: Close removes the idle containers and
// those handed out and closed; none of the pool's label is left. A pool
// that left containers behind would leak one per server run.
func TestPool_CloseRemovesEverything(t *testing.T) {
	cli := engine(t, busyboxImage)
	p, err := docker.NewPool(t.Context(), docker.PoolOptions{Size: 2, Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	o := poolOptions()
	if err := p.Warm(o); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, p, o, 2)
	e, err := p.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, e, "true")
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ids := pooled(t, cli, p); len(ids) != 0 {
		t.Fatalf("containers of the pool left after Close: %v", ids)
	}
	// A closed pool still gives environments, made on the spot.
	e2, err := p.New(ctx, o)
	if err != nil {
		t.Fatalf("New on a closed pool: %v", err)
	}
	defer e2.Close(context.Background())
	if labelsOf(t, cli, e2.ContainerID())[docker.LabelPool] != "" {
		t.Errorf("a closed pool handed out a pooled container")
	}
}

// TestPool_SpecMismatchIsCold: Options whose container would differ from
// the warm spec's (here the network) get a container made for them, never
// a pooled one of another configuration.
func TestPool_SpecMismatchIsCold(t *testing.T) {
	cli := engine(t, busyboxImage)
	p := newPool(t, cli, 1)
	o := poolOptions()
	if err := p.Warm(o); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, p, o, 1)
	other := o
	other.Network = "none"
	e := poolNew(t, p, other)
	if labelsOf(t, cli, e.ContainerID())[docker.LabelPool] != "" {
		t.Fatalf("a spec with network none got a pooled container of the default network")
	}
	if res := mustRun(t, e, "ip -o link 2>/dev/null | grep -vc ': lo:' || true"); res.Output != "0\n" {
		t.Errorf("network none container has interfaces besides lo: %q", res.Output)
	}
	if p.Idle(o) != 1 {
		t.Errorf("the warm spec lost its container to another spec")
	}
}

// TestPool_DeadContainerNotHandedOut: a pooled container killed while it
// waited is dropped at handout, and the caller gets a working one whose
// first command is no recreation.
func TestPool_DeadContainerNotHandedOut(t *testing.T) {
	cli := engine(t, busyboxImage)
	p := newPool(t, cli, 1)
	o := poolOptions()
	if err := p.Warm(o); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, p, o, 1)
	dead := pooled(t, cli, p)
	if len(dead) != 1 {
		t.Fatalf("pool containers = %v; want 1", dead)
	}
	if err := cli.ContainerKill(t.Context(), dead[0], "KILL"); err != nil {
		t.Fatal(err)
	}
	e := poolNew(t, p, o)
	if e.ContainerID() == dead[0] {
		t.Fatalf("the killed container was handed out")
	}
	if res := mustRun(t, e, "true"); res.EnvironmentRecreated || res.Code != 0 {
		t.Fatalf("first command = %+v; want a plain success", res)
	}
}

// TestPool_ConcurrentNew: many callers at once each get their own working
// container (run with -race), pooled or not.
func TestPool_ConcurrentNew(t *testing.T) {
	cli := engine(t, busyboxImage)
	p := newPool(t, cli, 2)
	o := poolOptions()
	if err := p.Warm(o); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, p, o, 2)
	const n = 4
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			e, err := p.New(ctx, o)
			if err != nil {
				errs[i] = err
				return
			}
			defer e.Close(context.Background())
			res, err := e.Run(ctx, envs.Command{Shell: fmt.Sprintf("echo %d", i)})
			if err == nil && res.Output != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("output %q", res.Output)
			}
			ids[i], errs[i] = e.ContainerID(), err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != n {
		t.Errorf("callers shared containers: %v", ids)
	}
}
