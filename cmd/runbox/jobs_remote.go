package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// jobTarget says where a job command acts: this machine's job daemon, or
// the job daemon inside a task's docker container.
type jobTarget struct {
	backend, image, task string
}

// withJobTargets gives every job command --backend, --image and --task.
// With --backend docker the command runs as runbox itself inside the
// task's container (kept running between calls), against the job daemon
// there: jobs in a container get the same durable output, events and
// recovery as jobs on this machine, and outlive the CLI that started them.
func (a *app) withJobTargets(cmds []*cobra.Command) []*cobra.Command {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		t := &jobTarget{}
		f := c.Flags()
		f.StringVar(&t.backend, "backend", "", `where the job daemon is: "local" (default) or "docker" (the task's container)`)
		f.StringVar(&t.image, "image", "", "container image, with --backend docker (default from config)")
		f.StringVar(&t.task, "task", "", "the task whose container holds the jobs, with --backend docker (default docker.task)")
		local := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			switch t.backend {
			case "", "local":
				return local(cmd, args)
			case "docker":
				return a.forwardJob(cmd, args, t)
			}
			return usageError{errorf("--backend %q: jobs run on local or docker", t.backend)}
		}
	}
	return cmds
}

// forwardJob runs this job command inside the task's container, with its
// output and exit status passed through. A start passes the gate here
// first, as for a local job; the runbox inside then runs with --yolo so
// the decision taken here (with a human, if one was asked) is not asked
// again where nobody can answer. Hardline commands stay refused there too.
func (a *app) forwardJob(cmd *cobra.Command, args []string, t *jobTarget) error {
	ctx := cmd.Context()
	task := firstNonEmpty(t.task, a.cfg.Docker.Task)
	if task == "" {
		return usageError{errorf("--backend docker: name the container that keeps the jobs with --task (or docker.task)")}
	}
	spec := envs.Spec{Image: firstNonEmpty(t.image, a.cfg.Docker.Image)}
	argv := []string{docker.AgentPath, cmd.Name()}
	if cmd.Name() == "start" {
		shell := shellCommand(args)
		if err := a.authorize(ctx, shell, "docker", "", a.hostAccess(ctx, "docker", spec)); err != nil {
			return err
		}
		argv = []string{docker.AgentPath, "--yolo", "start"}
	}
	argv = append(argv, forwardedFlags(cmd)...)
	argv = append(argv, "--")
	argv = append(argv, args...)

	opts := a.dockerOptions(spec)
	opts.Task, opts.Persistent, opts.KeepRunning = task, true, true
	env, err := docker.New(ctx, opts)
	if err != nil {
		return err
	}
	defer env.Close(context.WithoutCancel(ctx))
	if env.Fallback() != "" {
		return errorf("--backend docker: jobs need runbox inside the container: %s", env.Fallback())
	}
	// Streamed like run's output; `write ID -` reads runbox's stdin.
	return runStreaming(ctx, a, env, envs.Command{Args: argv, Stdin: a.commandStdin()})
}

// forwardedFlags are the flags the user set on cmd, less the ones that
// chose the target, spelled so the runbox inside parses them alike.
func forwardedFlags(cmd *cobra.Command) []string {
	var out []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "backend", "image", "task", "config", "verbose", "yolo":
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}
