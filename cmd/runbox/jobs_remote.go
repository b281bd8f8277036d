package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// jobTarget says where a job command acts: this machine's job daemon, or
// the job daemon inside a task's docker container.
type jobTarget struct {
	backend, image, task string
}

// remoteJobs is the job registry in a task's container, reached through
// the agent (service.SandboxJobs); the container is opened on first use
// and kept running after the command (its jobs outlive the CLI).
type remoteJobs struct {
	spec envs.Spec
	opts docker.Options
	env  *docker.Env
}

// withJobTargets gives every job command --backend, --image and --task.
// With --backend docker the same command runs against the job daemon
// inside the task's container (kept running between calls): jobs there
// get the same durable output, events and recovery as jobs on this
// machine, and outlive the CLI that started them. The gate runs here, on
// this machine, before anything reaches the container.
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
				r, err := a.remoteTarget(t)
				if err != nil {
					return err
				}
				a.remote = r
				defer r.close(context.WithoutCancel(cmd.Context()))
				return local(cmd, args)
			}
			return usageError{errorf("--backend %q: jobs run on local or docker", t.backend)}
		}
	}
	return cmds
}

func (a *app) remoteTarget(t *jobTarget) (*remoteJobs, error) {
	task := firstNonEmpty(t.task, a.cfg.Docker.Task)
	if task == "" {
		return nil, usageError{errorf("--backend docker: name the container that keeps the jobs with --task (or docker.task)")}
	}
	spec := envs.Spec{Image: firstNonEmpty(t.image, a.cfg.Docker.Image)}
	opts := a.dockerOptions(spec)
	opts.Task, opts.Persistent, opts.KeepRunning = task, true, true
	return &remoteJobs{spec: spec, opts: opts}, nil
}

// client opens the task's container (once) and returns a client of the
// job daemon inside it.
func (r *remoteJobs) client(ctx context.Context) (*procregistry.Client, error) {
	if r.env == nil {
		env, err := docker.New(ctx, r.opts)
		if err != nil {
			return nil, err
		}
		if fb := env.Fallback(); fb != "" {
			env.Close(context.WithoutCancel(ctx))
			return nil, errorf("--backend docker: jobs need runbox inside the container: %s", fb)
		}
		r.env = env
	}
	return service.SandboxJobs(r.env, []string{docker.CLIPath, service.RelayCommand}), nil
}

func (r *remoteJobs) close(ctx context.Context) {
	if r.env != nil {
		r.env.Close(ctx)
	}
}

// jobGate is where the gate is told a job command runs: the task's
// container, or this machine.
func (a *app) jobGate(ctx context.Context, dir string) service.JobTarget {
	if a.remote != nil {
		return service.JobTarget{Backend: "docker", HostAccess: a.hostAccess(ctx, "docker", a.remote.spec)}
	}
	return service.JobTarget{Backend: "local", HostAccess: true, Dir: dir}
}

func withAsker(t service.JobTarget, asker approval.Asker) service.JobTarget {
	t.Asker = asker
	return t
}
