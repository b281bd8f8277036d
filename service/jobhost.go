package service

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kubernetes"
	"github.com/runbox/runbox/ssh"
)

// OpenJobHost opens, through the provider table, the environment whose
// own job daemon a job command acts on: a task's container (docker; name
// the task with the SettingTask setting), a task's pod (kubernetes) or a
// remote host (ssh). It returns the argv of `runbox __relay` there, for
// [SandboxJobs]. An environment that cannot run the runbox CLI (its agent
// fell back to native exec) or a backend without a job daemon of its own
// is refused: jobs there would not outlive the command that started them.
// So are modal and daytona for now: their sessions' jobs run in the
// sandbox's own daemon ([Session.SandboxJobs]), but a modal task's
// sandbox is snapshotted and terminated, and a daytona task's usually
// stopped, when the command that opened it ends, and its jobs with it.
func (s *Service) OpenJobHost(ctx context.Context, backend string, spec envs.Spec) (envs.Environment, []string, error) {
	env, err := s.open(ctx, backend, spec)
	if err != nil {
		return nil, nil, err
	}
	var relay []string
	var fallback string
	switch e := env.(type) {
	case *docker.Env:
		relay, fallback = []string{docker.CLIPath, RelayCommand}, e.Fallback()
		if fallback != "" {
			fallback = "jobs need runbox inside the container: " + fallback
		}
	case *ssh.Env:
		relay, fallback = []string{e.CLIPath(), RelayCommand}, e.Fallback()
		if fallback != "" {
			fallback = fmt.Sprintf("jobs need the runbox agent on %s: %s", e.Host(), fallback)
		}
	case *kubernetes.Env:
		relay, fallback = []string{e.CLIPath(), RelayCommand}, e.Fallback()
		if fallback != "" {
			fallback = "jobs need runbox inside the pod: " + fallback
		}
	default:
		env.Close(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("service: --backend %s: no job daemon that outlives the command: %w", backend, envs.ErrUnsupported)
	}
	if fallback != "" {
		env.Close(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("service: --backend %s: %s", backend, fallback)
	}
	return env, relay, nil
}

// OpenSSHAgent opens the ssh backend for spec through the provider table
// and returns it with the host it reached (user@host:port), refusing a
// connection whose agent fell back to native exec: what is measured or
// relied on there is the agent.
func (s *Service) OpenSSHAgent(ctx context.Context, spec envs.Spec) (envs.Environment, string, error) {
	env, err := s.providers.Open(ctx, "ssh", spec)
	if err != nil {
		return nil, "", err
	}
	e, ok := env.(*ssh.Env)
	if !ok {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("service: the ssh row opened a %T", env)
	}
	if fb := e.Fallback(); fb != "" {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("service: the runbox agent does not run on %s: %s", e.Host(), fb)
	}
	return env, e.Host(), nil
}
