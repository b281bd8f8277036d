package service

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// ErrNoSandboxJobs is matched by the refusal of background jobs on a
// backend whose sandbox cannot hold runbox's job daemon, or whose
// environment runs without the agent (a native-exec fallback, daytona's
// no_agent).
// Nothing was started.
// Such errors match envs.ErrUnsupported too.
var ErrNoSandboxJobs = errors.New("service: background jobs are not available in this sandbox")

// SandboxJobsSupported reports whether the session's background jobs can
// run where its commands run: on this machine in the local job daemon,
// elsewhere in the job daemon inside the session's own container, host,
// pod or sandbox, where its backend can hold one ([envs.Provider] Jobs).
// For other backends it returns an error matching [ErrNoSandboxJobs]
// that says why, without opening anything. (A session whose agent does
// not run — a native-exec fallback, daytona's no_agent — is refused
// later, when its environment is open: see relayArgv.)
func (ss *Session) SandboxJobsSupported() error {
	p, err := ss.svc.providers.Lookup(ss.Backend)
	if err != nil {
		return err
	}
	if p.OnThisMachine || p.Jobs != envs.NoJobs {
		return nil
	}
	return fmt.Errorf("%w: backend %s: %w", ErrNoSandboxJobs, ss.Backend, envs.ErrUnsupported)
}

// JobsOnThisMachine reports whether the session's background jobs are
// this machine's job daemon's ([Session.Jobs]) rather than the daemon's
// in its environment ([Session.SandboxJobs]).
func (ss *Session) JobsOnThisMachine() bool { return ss.svc.onThisMachine(ss.Backend) }

// SandboxJobs returns the session's jobs in the job daemon inside its own
// environment: the container or host its commands run in, reached through
// the agent channel ([SandboxJobs] with `runbox __relay`). Nothing is
// opened here: the environment is opened (as its first command would
// open it) and the runbox CLI put in it by the first call that reaches
// the registry, which [OwnedJobs.Start] makes only after the gate let the
// command through. The jobs get the session's owner and a fresh token,
// like the local daemon's ([Session.Jobs]); the gate is told the backend
// and whether it can touch this machine.
//
// A session's jobs in a container that is removed when the session ends
// (a docker session without a task) end with it, detached and handed-off
// ones too: they have nowhere else to run.
func (ss *Session) SandboxJobs(ctx context.Context, maxLive int) (*OwnedJobs, error) {
	if err := ss.SandboxJobsSupported(); err != nil {
		return nil, err
	}
	if ss.JobsOnThisMachine() {
		return nil, fmt.Errorf("service: session %s runs on this machine: its jobs are the local job daemon's (Session.Jobs)", ss.ID)
	}
	host, _ := ss.hostAccess(ctx)
	c := &procregistry.Client{Dial: ss.dialRelay}
	return ss.Jobs(c, OwnedJobsOptions{Backend: ss.Backend, HostAccess: host, MaxLive: maxLive}), nil
}

// dialRelay opens one connection to the job daemon in the session's
// environment: a `runbox __relay` started there through the agent.
func (ss *Session) dialRelay(ctx context.Context) (net.Conn, error) {
	env, err := ss.Env(ctx)
	if err != nil {
		return nil, err
	}
	relay, err := relayArgv(ss.Backend, env)
	if err != nil {
		return nil, err
	}
	return SandboxJobs(env, relay).Dial(ctx)
}

// relayArgv is the argv of `runbox __relay` in env, where the backend
// puts the runbox CLI before a command that runs it (CLIPath). An
// environment whose agent did not start (commands through the native
// exec API, or daytona's toolbox sessions under no_agent) has no CLI
// either: its jobs are refused, with the reason.
func relayArgv(backend string, env envs.Environment) ([]string, error) {
	if fb, ok := env.(interface{ Fallback() string }); ok {
		if why := fb.Fallback(); why != "" {
			return nil, fmt.Errorf("%w: the %s session runs without the runbox agent (%s), and its jobs need runbox inside: %w", ErrNoSandboxJobs, backend, why, envs.ErrUnsupported)
		}
	}
	if c, ok := env.(interface{ CLIPath() string }); ok && c.CLIPath() != "" {
		return []string{c.CLIPath(), RelayCommand}, nil
	}
	return nil, fmt.Errorf("%w: backend %s (%T): %w", ErrNoSandboxJobs, backend, env, envs.ErrUnsupported)
}
