package service

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
)

// OpenJobHost opens, through the provider table, the environment whose
// own job daemon a job command acts on: one that outlives the command
// ([envs.LastingJobs]: a task's container or pod, named with the
// SettingTask setting, or a remote host). It returns the argv of
// `runbox __relay` there, for [SandboxJobs]. An environment that cannot
// run the runbox CLI (its agent fell back to native exec) or a backend
// without a lasting job daemon is refused: jobs there would not outlive
// the command that started them. So are backends whose sessions' jobs
// run in the sandbox's own daemon ([Session.SandboxJobs]) but whose
// task's sandbox ends with the command that opened it (a modal task's
// sandbox is snapshotted and terminated, a daytona task's usually
// stopped), and its jobs with it.
func (s *Service) OpenJobHost(ctx context.Context, backend string, spec envs.Spec) (envs.Environment, []string, error) {
	p, err := s.providers.Lookup(backend)
	if err != nil {
		return nil, nil, err
	}
	if p.Jobs != envs.LastingJobs {
		return nil, nil, fmt.Errorf("service: --backend %s: no job daemon that outlives the command: %w", backend, envs.ErrUnsupported)
	}
	env, err := s.open(ctx, backend, spec)
	if err != nil {
		return nil, nil, err
	}
	relay, err := relayArgv(backend, env)
	if err != nil {
		env.Close(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("service: --backend %s: %w", backend, err)
	}
	return env, relay, nil
}
