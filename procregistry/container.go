package procregistry

import (
	"context"
	"fmt"
	"time"

	"github.com/runbox/runbox/termination"
)

// openTimeout bounds reopening a job's container (a D-Bus connection for
// a systemd scope).
const openTimeout = 10 * time.Second

// jobContainer reopens the job's container from its pid.json record, so a
// registry that did not start the job (or a restarted one) reaches the
// same cgroup or scope. It is nil when the job has no record or no
// container of its own, or when the container cannot be reopened
// (logged): the teardown then falls back to the process group and the
// /proc descendants. See runningContainer for what stands in for a missing
// container while the job runs.
func (r *Registry) jobContainer(ctx context.Context, j *job) termination.Container {
	r.mu.Lock()
	pids := j.pids
	r.mu.Unlock()
	return r.containerOf(ctx, j.id, pids, false)
}

// runningContainer is jobContainer for a job that runs: without a cgroup
// or scope, its tree is its supervisor's descendants while a subreaper
// supervisor lives, else the process group its wrapper leads (the
// command's own, for a job started without a wrapper). That group is
// trusted only while the job runs, when its leader is alive or just
// gone: long after, a recycled PID could lead a stranger's group.
func (r *Registry) runningContainer(ctx context.Context, j *job) termination.Container {
	r.mu.Lock()
	pids := j.pids
	r.mu.Unlock()
	return r.containerOf(ctx, j.id, pids, true)
}

// containerOf reopens the container of pids (job id); withGroup stands
// the process group in for a missing one, as runningContainer says.
func (r *Registry) containerOf(ctx context.Context, id string, pids *pidRecord, withGroup bool) termination.Container {
	if pids == nil {
		return nil
	}
	if pids.Container == nil {
		if pids.Subreaper && pids.Supervisor.Alive() {
			return supervisorTree{sup: pids.Supervisor}
		}
		leader := pids.Wrapper
		if leader.PID == 0 {
			leader = pids.Command
		}
		if !withGroup || leader.PID == 0 || leader.StartTime == 0 {
			return nil
		}
		c, err := termination.OpenContainer(ctx, termination.ContainerRef{Mechanism: termination.ProcessGroup, Leader: leader})
		if err != nil {
			return nil
		}
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	c, err := termination.OpenContainer(ctx, *pids.Container)
	if err != nil {
		r.log.Warn("procregistry: reopen container", "job", id, "err", err)
		return nil
	}
	return c
}

// killLeftovers tears down what a job that is no longer running left in
// its container (background children that outlived the command, or a
// command that lost its supervisor), waiting grace after SIGTERM, and
// removes the container. It returns how many processes the container
// held; zero, with no error, when the job has no container or it is
// already gone.
func (r *Registry) killLeftovers(ctx context.Context, j *job, grace time.Duration) (int, error) {
	c := r.jobContainer(ctx, j)
	if c == nil {
		return 0, nil
	}
	pids, err := c.Procs()
	if err != nil {
		return 0, fmt.Errorf("procregistry: container of %s: %w", j.id, err)
	}
	if len(pids) == 0 {
		// Nothing to kill; remove it in case it outlived its supervisor.
		if err := c.Remove(ctx); err != nil {
			return 0, fmt.Errorf("procregistry: container of %s: %w", j.id, err)
		}
		return 0, nil
	}
	// No root: the command is gone (or, for a lost job, killed through
	// its own identity first); the container alone names the rest.
	err = termination.KillTree(ctx, termination.Proc{}, termination.Options{Grace: grace, Container: c, Logger: r.log})
	if err != nil {
		return len(pids), fmt.Errorf("procregistry: leftovers of %s: %w", j.id, err)
	}
	return len(pids), nil
}
