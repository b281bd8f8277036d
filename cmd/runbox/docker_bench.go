package main

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
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
	image := cmp.Or(a.cfg.Docker.Image, "runbox-test-debian:bookworm")
	return []benchCase{
		{
			name: "docker-exec-true", backend: "docker", baseline: "docker exec CONTAINER true", n: 20,
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				env, id, err := a.svc.OpenContainer(ctx, image, benchTask(p.run), 0)
				if err != nil {
					return nil, nil, nil, err
				}
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
			custom: func(ctx context.Context, p benchParams) (measurement, error) {
				op := func(ctx context.Context) error {
					env, _, err := a.svc.OpenContainer(ctx, image, benchTask(p.run), time.Second)
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					return runTrue(ctx, env)
				}
				return alternate(ctx, "docker-create-to-first-command", op, dockerRunExec(image, p.run), nil, p.n)
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

func runTrue(ctx context.Context, env envs.Environment) error {
	res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
	if err == nil && res.Code != 0 {
		err = fmt.Errorf("true exited %d", res.Code)
	}
	return err
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

// alternate times op and base n times each, one after the other (after a
// warm-up of each), so that the engine's load, which drifts on a shared
// machine over the seconds a container measurement takes, weighs on both
// alike. ready, when set, runs untimed before each op and each base, so
// that neither is timed beside what the other left running.
func alternate(ctx context.Context, name string, op, base, ready func(context.Context) error, n int) (measurement, error) {
	var opT, baseT []time.Duration
	for i := range n + 1 { // the first round is a warm-up
		if ready != nil {
			if err := ready(ctx); err != nil {
				return measurement{}, err
			}
		}
		start := time.Now()
		if err := op(ctx); err != nil {
			return measurement{}, err
		}
		d := time.Since(start)
		if ready != nil {
			if err := ready(ctx); err != nil {
				return measurement{}, err
			}
		}
		start = time.Now()
		if err := base(ctx); err != nil {
			return measurement{}, fmt.Errorf("baseline: %w", err)
		}
		if i > 0 {
			opT, baseT = append(opT, d), append(baseT, time.Since(start))
		}
	}
	return measurement{
		Name: name, Backend: "docker", N: n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: "docker run -d + docker exec", BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// benchPoolSize is the warm pool of the pooled measurement: one ready
// container, refilled before each run (untimed), so that each run
// measures a request that finds the pool warm, as a server's does between
// sessions.
const benchPoolSize = 1

// benchPooled measures create-to-first-command (and Close) through a warm
// pool against the same baseline as the cold case.
func benchPooled(ctx context.Context, a *app, image string, p benchParams) (measurement, error) {
	pool, err := a.svc.NewWarmContainers(ctx, image, benchTask(p.run), benchPoolSize)
	if err != nil {
		return measurement{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pool.Close(cctx)
	}()
	op := func(ctx context.Context) error {
		env, err := pool.Open(ctx)
		if err != nil {
			return err
		}
		defer env.Close(context.WithoutCancel(ctx))
		return runTrue(ctx, env)
	}
	return alternate(ctx, "docker-create-to-first-command-pooled", op, dockerRunExec(image, p.run), pool.WaitQuiet, p.n)
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
	for _, f := range []string{benchLabel + "=" + run, service.DockerTaskLabel + "=" + benchTask(run)} {
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
