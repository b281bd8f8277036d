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
// versus `docker run -d` + `docker exec`.
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
				base = func(ctx context.Context) error {
					out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--init", "--label", benchLabel+"="+p.run,
						"--entrypoint", "/bin/sh", image, "-c", "while :; do sleep 3600; done").Output()
					if err != nil {
						return err
					}
					id := strings.TrimSpace(string(out))
					defer exec.Command("docker", "rm", "-f", id).Run()
					return exec.CommandContext(ctx, "docker", "exec", id, "true").Run()
				}
				return op, base, func() {}, nil
			},
		},
	}
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
