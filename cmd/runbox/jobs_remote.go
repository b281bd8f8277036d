package main

import (
	"context"
	"strings"

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
			if t.backend == "" {
				return local(cmd, args)
			}
			p, err := a.svc.Providers().Lookup(t.backend)
			if err != nil {
				return usageError{errorf("--backend: %v", err)}
			}
			if p.OnThisMachine {
				return local(cmd, args)
			}
			r, err := a.lastingJobs(t, p)
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

// lastingJobs is the job daemon in p's environment for the target's
// flags: a task's container or pod (named by --task or the
// configuration), a remote host. The environment is kept between
// commands, so its jobs outlive the command that started them.
func (a *app) lastingJobs(t *jobTarget, p envs.Provider) (*remoteJobs, error) {
	switch p.Jobs {
	case envs.NoJobs:
		return nil, usageError{errorf("--backend %s: its environments hold no job daemon; jobs run on %s", p.Name, strings.Join(a.jobBackends(), ", "))}
	case envs.SessionJobs:
		return nil, usageError{errorf("--backend %s: its jobs would not outlive the command (they are a session's: runbox serve); jobs run on %s", p.Name, strings.Join(a.jobBackends(), ", "))}
	}
	spec := envs.Spec{Image: t.image, Settings: map[string]string{}}
	if t.task != "" {
		spec.Settings[service.SettingTask] = t.task
	}
	t.ssh.apply(&spec)
	t.kube.apply(&spec)
	if p.TaskEnvs && (p.TaskOf == nil || p.TaskOf(spec) == "") {
		return nil, usageError{errorf("--backend %s: name the task whose environment keeps the jobs with --task (or %s.task in the configuration)", p.Name, p.Name)}
	}
	return a.jobHost(p.Name, spec), nil
}

// jobBackends are the backends a job command can act on: this machine's
// and those whose job daemon outlives the command.
func (a *app) jobBackends() []string {
	return a.svc.Providers().Where(func(p envs.Provider) bool { return p.OnThisMachine || p.Jobs == envs.LastingJobs })
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
