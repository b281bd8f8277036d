package main

import (
	"cmp"
	"context"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// jobTarget says where a job command acts: this machine's job daemon, the
// job daemon inside a task's docker container, or the one on a remote
// host over ssh.
type jobTarget struct{ placeFlags }

// remoteJobs is the job registry in a task's container or on an ssh host,
// reached through the agent (service.SandboxJobs); the environment is
// opened on first use. The registry outlives it: a container is kept
// running after the command, and the daemon on a host is nobody's child
// there (its jobs outlive the connection).
type remoteJobs struct {
	backend string
	spec    envs.Spec
	// open opens the environment and returns the argv of `runbox
	// __relay` in it.
	open  func(context.Context) (envs.Environment, []string, error)
	env   envs.Environment
	relay []string
}

// withJobTargets gives every job command --backend, --image and --task
// (docker) and --host, --identity and --accept-new-host-key (ssh). With
// --backend docker or ssh the same command runs against the job daemon
// inside the task's container or on the host: jobs there get the same
// durable output, events and recovery as jobs on this machine, and
// outlive the CLI that started them (and, over ssh, the connection). The
// gate runs here, on this machine, before anything is sent.
func (a *app) withJobTargets(cmds []*cobra.Command) []*cobra.Command {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		t := &jobTarget{}
		t.register(c.Flags(), forJobs)
		local := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			var r *remoteJobs
			var err error
			switch t.backend {
			case "", "local":
				return local(cmd, args)
			case "docker":
				r, err = a.dockerJobs(t)
			case "ssh":
				r = a.sshJobs(t)
			case "kubernetes":
				r, err = a.kubeJobs(t)
			default:
				return usageError{errorf("--backend %q: jobs run on local, docker, kubernetes or ssh", t.backend)}
			}
			if err != nil {
				return err
			}
			a.remote = r
			defer r.close(context.WithoutCancel(cmd.Context()))
			return local(cmd, args)
		}
	}
	return cmds
}

func (a *app) dockerJobs(t *jobTarget) (*remoteJobs, error) {
	task := cmp.Or(t.task, a.cfg.Docker.Task)
	if task == "" {
		return nil, usageError{errorf("--backend docker: name the container that keeps the jobs with --task (or docker.task)")}
	}
	spec := envs.Spec{Image: cmp.Or(t.image, a.cfg.Docker.Image), Settings: map[string]string{service.SettingTask: task}}
	return a.jobHost("docker", spec), nil
}

// sshJobs is the job daemon on an ssh host, run by the full runbox CLI
// uploaded next to the agent there. Closing the connection ends the
// relay, never the daemon or its jobs.
func (a *app) sshJobs(t *jobTarget) *remoteJobs {
	var spec envs.Spec
	t.ssh.apply(&spec)
	return a.jobHost("ssh", spec)
}

// jobHost is the job daemon in backend's environment for spec, opened
// through the service's provider table on first use.
func (a *app) jobHost(backend string, spec envs.Spec) *remoteJobs {
	open := func(ctx context.Context) (envs.Environment, []string, error) {
		return a.svc.OpenJobHost(ctx, backend, spec)
	}
	return &remoteJobs{backend: backend, spec: spec, open: open}
}

// client opens the environment (once) and returns a client of the job
// daemon there.
func (r *remoteJobs) client(ctx context.Context) (*procregistry.Client, error) {
	if r.env == nil {
		env, relay, err := r.open(ctx)
		if err != nil {
			return nil, err
		}
		r.env, r.relay = env, relay
	}
	return service.SandboxJobs(r.env, r.relay), nil
}

func (r *remoteJobs) close(ctx context.Context) {
	if r.env != nil {
		r.env.Close(ctx)
	}
}

// jobGate is where the gate is told a job command runs: the task's
// container, the ssh host, or this machine.
func (a *app) jobGate(ctx context.Context, dir string) service.JobTarget {
	if a.remote != nil {
		return service.JobTarget{Backend: a.remote.backend, HostAccess: a.hostAccess(ctx, a.remote.backend, a.remote.spec)}
	}
	return service.JobTarget{Backend: "local", HostAccess: true, Dir: dir}
}

func withAsker(t service.JobTarget, asker approval.Asker) service.JobTarget {
	t.Asker = asker
	return t
}

// startJob starts req through the core (the gate first, with whoever can
// answer its questions), on the registry connect reaches.
func (a *app) startJob(ctx context.Context, connect service.Connect, cwd string, req procregistry.StartRequest) (procregistry.Info, error) {
	var in procregistry.Info
	err := a.withAsker(func(asker approval.Asker) error {
		var err error
		in, err = a.svc.StartJob(ctx, connect, withAsker(a.jobGate(ctx, cwd), asker), req)
		return err
	})
	return in, err
}
