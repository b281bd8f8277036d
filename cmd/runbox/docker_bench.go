package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// benchLabel marks the containers the docker baselines start, with the
// bench run as its value, so the run can remove them whatever happened
// (a `docker run` cut short by Ctrl-C may have created one all the same).
const benchLabel = "io.runbox.bench"

// benchTask is the task label of the containers the docker backend makes
// in bench run.
func benchTask(run string) string { return "runbox-bench-" + run }

// benchDockerCases measures the docker backend against the docker CLI in
// the same run: `true` through runbox's agent versus `docker exec CONTAINER
// true` on the same container, and container create-to-first-command
// versus `docker run -d` + `docker exec`, without and with a warm pool.
func benchDockerCases(a *app) []benchCase {
	image := firstNonEmpty(a.cfg.Docker.Image, "runbox-test-debian:bookworm")
	return []benchCase{
		{
			name: "docker-exec-true", backend: "docker", baseline: "docker exec CONTAINER true", n: 20,
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				env, err := docker.New(ctx, docker.Options{Image: image, Task: benchTask(p.run), Logger: a.log})
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
			n: 2, maxN: 20, // each run creates and removes a container
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				op = func(ctx context.Context) error {
					env, err := docker.New(ctx, docker.Options{Image: image, Task: benchTask(p.run), Logger: a.log, StopTimeout: time.Second})
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					_, err = env.Run(ctx, envs.Command{Args: []string{"true"}})
					return err
				}
				return op, dockerRunExec(image, p.run), func() {}, nil
			},
		},
		{
			name: "docker-create-to-first-command-pooled", backend: "docker", baseline: "docker run -d + docker exec",
			n: 5, maxN: 20,
			custom: func(ctx context.Context, p benchParams) (measurement, error) {
				return benchPooled(ctx, a, image, p)
			},
		},
	}
}

// dockerRunExec is the baseline of container creation: `docker run -d`,
// `docker exec CONTAINER true`, then `docker rm -f`, as a user would.
func dockerRunExec(image, run string) func(context.Context) error {
	return func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--label", benchLabel+"="+run,
			"--entrypoint", "/bin/sh", image, "-c", "while :; do sleep 3600; done").Output()
		if err != nil {
			return err
		}
		id := strings.TrimSpace(string(out))
		defer exec.Command("docker", "rm", "-f", id).Run()
		return exec.CommandContext(ctx, "docker", "exec", id, "true").Run()
	}
}

// benchPoolSize is the warm pool of the pooled measurement: one ready
// container, refilled before each run (untimed), so that each run
// measures a request that finds the pool warm, as a server's does between
// sessions.
const benchPoolSize = 1

// benchPooled measures create-to-first-command (and Close) through a warm
// docker.Pool against the same baseline as the cold case.
func benchPooled(ctx context.Context, a *app, image string, p benchParams) (m measurement, err error) {
	pool, err := docker.NewPool(ctx, docker.PoolOptions{Size: benchPoolSize, Task: benchTask(p.run), Logger: a.log})
	if err != nil {
		return m, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pool.Close(cctx)
	}()
	opts := docker.Options{Image: image, Task: benchTask(p.run), Logger: a.log, StopTimeout: time.Second}
	if err := pool.Warm(opts); err != nil {
		return m, err
	}
	op := func(ctx context.Context) error {
		env, err := pool.New(ctx, opts)
		if err != nil {
			return err
		}
		defer env.Close(context.WithoutCancel(ctx))
		res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
		if err == nil && res.Code != 0 {
			err = fmt.Errorf("true exited %d", res.Code)
		}
		return err
	}
	var opT []time.Duration
	for i := range p.n + 1 { // the first is a warm-up
		if err := waitPoolReady(ctx, pool, opts); err != nil {
			return m, err
		}
		start := time.Now()
		if err := op(ctx); err != nil {
			return m, err
		}
		if i > 0 {
			opT = append(opT, time.Since(start))
		}
	}
	base := dockerRunExec(image, p.run)
	if err := base(ctx); err != nil {
		return m, fmt.Errorf("baseline: %w", err)
	}
	baseT, err := timeN(ctx, base, p.n)
	if err != nil {
		return m, fmt.Errorf("baseline: %w", err)
	}
	return measurement{
		Name: "docker-create-to-first-command-pooled", Backend: "docker", N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: "docker run -d + docker exec", BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// waitPoolReady waits (untimed) until the pool holds a ready container
// for opts, within a bound that only catches a pool that never fills.
func waitPoolReady(ctx context.Context, pool *docker.Pool, opts docker.Options) error {
	deadline := time.Now().Add(2 * time.Minute)
	for pool.Idle(opts) < benchPoolSize {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool made no ready container in 2 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// benchSweepDocker removes every container that bench run left, when a
// docker measurement was among cases: the baselines' (labelled
// benchLabel=run) and the docker backend's (task benchTask(run)) — those
// that a cancelled create or run made after all.
func benchSweepDocker(cases []benchCase, run string, prog *benchProgress) {
	used := false
	for _, c := range cases {
		used = used || c.backend == "docker"
	}
	if !used {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for _, f := range []string{benchLabel + "=" + run, docker.LabelTask + "=" + benchTask(run)} {
		out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label="+f).Output()
		if err != nil {
			return // no engine: nothing was made
		}
		ids = append(ids, strings.Fields(string(out))...)
	}
	if len(ids) == 0 {
		return
	}
	prog.say("removing %d containers", len(ids))
	exec.CommandContext(ctx, "docker", append([]string{"rm", "-f"}, ids...)...).Run()
}
