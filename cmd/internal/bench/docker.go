package bench

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/runbox/runbox/docker"
)

// defaultImage is the image of the docker measurements when the
// configuration names none: the test image scripts/docker builds.
const defaultImage = "runbox-test-debian:bookworm"

// label marks the containers the docker baselines start, with the bench
// run as its value, so the run can remove them whatever happened (a
// `docker run` cut short by Ctrl-C may have created one all the same).
const label = "io.runbox.bench"

// task is the task label of the containers the docker backend makes in
// bench run.
func task(run string) string { return "runbox-bench-" + run }

// dockerCases measure the docker backend against the docker CLI in the
// same run: `true` through runbox's agent versus `docker exec CONTAINER
// true` on the same container, and container create-to-first-command
// versus `docker run -d` + `docker exec`, without and with a warm pool.
func dockerCases(h Host) []caseDef {
	image := cmp.Or(h.Service.Config().Docker.Image, defaultImage)
	return []caseDef{
		{
			name: "docker-exec-true", backend: "docker", baseline: "docker exec CONTAINER true", n: 20,
			setup: func(ctx context.Context, p params) (op, base func(context.Context) error, cleanup func(), err error) {
				env, err := openContainer(ctx, h, image, task(p.run), 0)
				if err != nil {
					return nil, nil, nil, err
				}
				id := env.ContainerID()
				base = func(ctx context.Context) error {
					return exec.CommandContext(ctx, "docker", "exec", id, "true").Run()
				}
				return trueIn(env), base, func() { env.Close(context.Background()) }, nil
			},
		},
		{
			name: "docker-create-to-first-command", backend: "docker", baseline: "docker run -d + docker exec",
			n: 2, maxN: 20, // each run creates and removes a container
			custom: func(ctx context.Context, p params) (Measurement, error) {
				op := func(ctx context.Context) error {
					env, err := openContainer(ctx, h, image, task(p.run), time.Second)
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
			custom: func(ctx context.Context, p params) (Measurement, error) {
				return dockerPooled(ctx, h, image, p)
			},
		},
	}
}

// openContainer makes a container of image for task, removed on Close
// (stop bounds its stop): unlike a session's, it is never kept running
// for the task. It is made below the provider table, which has no spec
// for a container that is neither a session's nor kept.
func openContainer(ctx context.Context, h Host, image, task string, stop time.Duration) (*docker.Env, error) {
	return docker.New(ctx, docker.Options{Image: image, Task: task, Logger: h.logger(), StopTimeout: stop})
}

// dockerRunExec is the baseline of container creation: `docker run -d`,
// `docker exec CONTAINER true`, then `docker rm -f`, as a user would.
func dockerRunExec(image, run string) func(context.Context) error {
	return func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--label", label+"="+run,
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
func alternate(ctx context.Context, name string, op, base, ready func(context.Context) error, n int) (Measurement, error) {
	var opT, baseT []time.Duration
	for i := range n + 1 { // the first round is a warm-up
		if ready != nil {
			if err := ready(ctx); err != nil {
				return Measurement{}, err
			}
		}
		start := time.Now()
		if err := op(ctx); err != nil {
			return Measurement{}, err
		}
		d := time.Since(start)
		if ready != nil {
			if err := ready(ctx); err != nil {
				return Measurement{}, err
			}
		}
		start = time.Now()
		if err := base(ctx); err != nil {
			return Measurement{}, fmt.Errorf("baseline: %w", err)
		}
		if i > 0 {
			opT, baseT = append(opT, d), append(baseT, time.Since(start))
		}
	}
	return Measurement{
		Name: name, Backend: "docker", N: n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: "docker run -d + docker exec", BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// poolSize is the warm pool of the pooled measurement: one ready
// container, refilled before each run (untimed), so that each run
// measures a request that finds the pool warm, as a server's does between
// sessions.
const poolSize = 1

// dockerPooled measures create-to-first-command (and Close) through a
// warm pool against the same baseline as the cold case.
func dockerPooled(ctx context.Context, h Host, image string, p params) (Measurement, error) {
	pool, err := newWarmPool(ctx, h, image, task(p.run), poolSize)
	if err != nil {
		return Measurement{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pool.close(cctx)
	}()
	op := func(ctx context.Context) error {
		env, err := pool.open(ctx)
		if err != nil {
			return err
		}
		defer env.Close(context.WithoutCancel(ctx))
		return runTrue(ctx, env)
	}
	return alternate(ctx, "docker-create-to-first-command-pooled", op, dockerRunExec(image, p.run), pool.waitQuiet, p.n)
}

// sweepDocker removes every container that bench run left, when a
// docker measurement was among cases: the baselines' (labelled label=run)
// and the docker backend's (task task(run)) — those that a cancelled
// create or run made after all.
func sweepDocker(cases []caseDef, run string, prog *progress) {
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
	for _, f := range []string{label + "=" + run, docker.LabelTask + "=" + task(run)} {
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
