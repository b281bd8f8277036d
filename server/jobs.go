package server

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// sessionJobs reaches the registry a session's background jobs run in:
// for a local session the server's (Options.Jobs: the per-user job
// daemon), for a docker, ssh, kubernetes, modal or daytona session the
// job daemon inside the session's own sandbox or on its own host,
// through the session's agent channel. Either way the jobs are the
// session's alone, judged by the gate before a registry is reached, and
// their events come to the client through the same pump. A backend whose sandbox cannot hold the
// job daemon is refused with the reason (service.ErrNoSandboxJobs).
func (s *Server) sessionJobs(ctx context.Context, ss *service.Session) (*service.OwnedJobs, error) {
	max := s.opts.MaxJobs
	if max < 0 {
		max = 0
	}
	if err := ss.SandboxJobsSupported(); err != nil {
		return nil, fmt.Errorf("runbox: session %s: %w", ss.ID, err)
	}
	if !ss.JobsOnThisMachine() {
		return ss.SandboxJobs(ctx, max)
	}
	if s.opts.Jobs == nil {
		return nil, fmt.Errorf("runbox: background jobs are not available on this server: %w", envs.ErrUnsupported)
	}
	reg, err := s.opts.Jobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("runbox: job registry: %w", err)
	}
	return ss.Jobs(reg, service.OwnedJobsOptions{Backend: ss.Backend, HostAccess: true, MaxLive: max}), nil
}

// remoteJobDir is where a background job of a session on another backend
// starts when it names no directory: where the session's last command
// ended, else the server's directory for commands (a path there: the
// server's own job directory is a path of this machine).
func (s *session) remoteJobDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd != "" {
		return s.cwd
	}
	return s.srv.opts.Spec.Dir
}
