package procregistry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// KillOutcome says what a kill did. It is a closed set.
type KillOutcome string

const (
	// KillKilled: the job's tree was torn down. For a job that had
	// already finished, it means processes the job left behind in its
	// container were (KillResult.Leftovers says how many); the job's
	// status stays what it was.
	KillKilled KillOutcome = "killed"
	// KillAlreadyExited: the job had finished before and left nothing
	// running; nothing was sent.
	KillAlreadyExited KillOutcome = "already_exited"
	// KillLost: the job's process cannot be vouched for (its PID now
	// names another program, or it is gone without a recorded exit);
	// nothing was sent.
	KillLost KillOutcome = "lost"
)

// KillResult answers a kill.
type KillResult struct {
	ID      string      `json:"id"`
	Outcome KillOutcome `json:"outcome"`
	// Survivors are processes that outlived the teardown (the error is
	// then an *envs.SurvivorsError too).
	Survivors []int `json:"survivors,omitempty"`
	// Leftovers is how many processes a job that was no longer running
	// had left in its container (daemons it started, or a lost job's
	// tree); they were killed, and the outcome is then [KillKilled].
	Leftovers int  `json:"leftovers,omitempty"`
	Info      Info `json:"info"`
}

// settleWait bounds how long a kill waits for the supervisor to report
// the exit of the tree it just tore down.
const settleWait = 10 * time.Second

// Kill tears down the job's whole tree (termination.KillTree: parent
// first, grace, survivors, SIGKILL, then the job's container, reopened
// from pid.json, so processes that double-forked away are caught too)
// and waits for its exit to be recorded. For a job that already ended,
// it kills whatever the job left running in its container. A PID whose
// start time no longer matches is never signalled. Survivors are returned
// as an error wrapping *envs.SurvivorsError, with the result filled in.
func (r *Registry) Kill(ctx context.Context, id string) (KillResult, error) {
	return r.kill(ctx, id, "kill")
}

func (r *Registry) kill(ctx context.Context, id, by string) (KillResult, error) {
	j, err := r.resolve(id)
	if err != nil {
		return KillResult{}, err
	}
	select {
	case <-j.started:
	case <-ctx.Done():
		return KillResult{ID: j.id}, fmt.Errorf("procregistry: kill %s: %w", j.id, ctx.Err())
	}
	r.mu.Lock()
	status, pids, orphaned := j.status, j.pids, j.orphaned
	exitKnown := isClosed(j.exitSeen)
	if !status.Finished() && !exitKnown && j.kill == nil {
		j.kill = &killRecord{By: by, Time: time.Now()}
		if err := writeJSON(filepath.Join(j.dir, fileKill), j.kill); err != nil {
			r.log.Warn("procregistry: kill record", "job", j.id, "err", err)
		}
	}
	r.mu.Unlock()

	res := KillResult{ID: j.id}
	switch {
	case status == StatusLost && pids != nil && pids.Command.Alive():
		// Lost means the exit cannot be learned, not that the command is
		// gone: it still runs under its own identity, so stop it.
	case !status.Finished() && !exitKnown && orphaned:
		// Its supervisor died, but it runs on (if only through children
		// the command left): tear down what is there; the registry's own
		// watch of the job records the end.
	case status.Finished() || exitKnown || !pids.Command.Alive():
		// It ended (or its exit report is on its way, or its PID was
		// recycled): never signal the PID, wait for the supervisor's
		// word, then take down what it left in its container.
		r.waitDone(ctx, j)
		res = r.killAnswer(j, res)
		n, kerr := r.killLeftovers(ctx, j, r.opts.Grace)
		if n > 0 {
			res.Outcome, res.Leftovers = KillKilled, n
		}
		return r.killResult(j, res, kerr)
	}
	c := r.runningContainer(ctx, j)
	kerr := termination.KillTree(ctx, pids.Command, termination.Options{Grace: r.opts.Grace, Container: c, Logger: r.log})
	r.waitDone(ctx, j)
	res.Info = r.info(j)
	res.Outcome = KillKilled
	return r.killResult(j, res, kerr)
}

// killResult adds a teardown error, and the survivors it names, to res.
func (r *Registry) killResult(j *job, res KillResult, kerr error) (KillResult, error) {
	if kerr == nil {
		return res, nil
	}
	var se *envs.SurvivorsError
	if errors.As(kerr, &se) {
		res.Survivors = se.PIDs
	}
	return res, fmt.Errorf("procregistry: kill %s: %w", j.id, kerr)
}

// killAnswer fills res for a kill that sent nothing.
func (r *Registry) killAnswer(j *job, res KillResult) KillResult {
	res.Info = r.info(j)
	switch res.Info.Status {
	case StatusLost:
		res.Outcome = KillLost
	case StatusRunning, StatusStarting:
		res.Outcome = KillLost // the exit was never reported
	default:
		res.Outcome = KillAlreadyExited
	}
	return res
}

func (r *Registry) waitDone(ctx context.Context, j *job) {
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
	case <-ctx.Done():
	case <-r.ctx.Done():
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
