package procregistry

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// A job whose supervisor died is not over. Its command writes straight
// into its log, so its output goes on being recorded; its wrapper (see
// the supervisor package's wrapper.go) still waits for it and writes its exit code to disk. The
// registry adopts such an orphan: the job stays running for as long as
// its processes live, and when they are gone its exit comes from the
// exitcode file, or, if the wrapper could not write one (it was killed
// too), the job is lost with a reason that says so. Only stdin writes
// and terminal resizes, which went through the supervisor, are gone.
//
// Nothing here polls: the registry waits on a pidfd of the process that
// keeps the job running (the wrapper, else the command), or on the
// cgroup.events file of the job's cgroup (exitwait_linux.go).

// Texts of an adopted job.
const (
	noteOrphanExit   = "the supervisor died; the exit code was recorded by the job's wrapper"
	noteOrphanKilled = "the supervisor died; the job was killed with SIGKILL, its wrapper too, so the status is the kill's"
	warnOrphan       = "the supervisor died; the job runs on and its exit code will be recorded, but its stdin is gone"
	lostOrphan       = "the supervisor died, and the job's processes ended without recording an exit status"
)

// orphanCheck looks at a running job whose supervisor is gone. It returns
// the job's exit when that is known; else running says whether any of its
// processes is still alive. Neither means the job is lost. The exit's
// Ended is the time the exitcode file was written.
func (r *Registry) orphanCheck(ctx context.Context, j *job, pids *pidRecord) (rec *exitRecord, running bool) {
	if rec := readExit(j.dir); rec != nil {
		return rec, false // the supervisor recorded it before it died
	}
	if pids.Wrapper.Alive() {
		return nil, true
	}
	if code, at, ok := readExitCode(j.dir); ok {
		return &exitRecord{Status: launch.ShellStatus(code), Ended: at, Note: noteOrphanExit}, false
	}
	if pids.Command.Alive() {
		return nil, true
	}
	// The command's children may run on without it: only a cgroup or a
	// scope can tell (a process group named by a dead leader's PID could
	// be a stranger's by now).
	if c := r.containerOf(ctx, j.id, pids, false); c != nil {
		if empty, err := c.Empty(); err == nil && !empty {
			return nil, true
		}
	}
	var kill killRecord
	if ok, _ := readJSON(filepath.Join(j.dir, fileKill), &kill); ok {
		// A kill went straight to SIGKILL (no grace), which took the
		// wrapper down with the command before it could write anything:
		// that SIGKILL is how the command ended.
		return &exitRecord{Status: envs.SignalStatus(syscall.SIGKILL), Ended: kill.Time, Note: noteOrphanKilled}, false
	}
	return nil, false
}

// followOrphan is the monitor of a running job whose supervisor died. It
// waits until nothing of the job runs, then records how it ended.
func (r *Registry) followOrphan(j *job) {
	r.mu.Lock()
	pids := j.pids
	j.orphaned = true
	r.mu.Unlock()
	r.log.Info("procregistry: supervisor gone; following the job's processes", "job", j.id, "supervisor", pids.Supervisor)
	for {
		rec, running := r.orphanCheck(r.ctx, j, pids)
		if r.ctx.Err() != nil {
			return
		}
		if !running {
			if rec != nil && rec.Note != "" {
				// Learned just now, from the pidfd: now is when it ended
				// (the file's time may lag behind by a clock tick).
				rec.Ended = time.Now()
			}
			r.settleOrphan(r.ctx, j.id, j.dir, pids, rec, jobdir.CopierLinger)
			if rec != nil {
				r.conclude(j, rec, "")
			} else {
				r.conclude(j, nil, lostOrphan)
			}
			return
		}
		if err := r.waitOrphan(r.ctx, j.id, pids); err != nil {
			if r.ctx.Err() != nil {
				return
			}
			// The wait itself failed (out of fds, say): look again later.
			r.log.Warn("procregistry: wait for an adopted job", "job", j.id, "err", err)
			pause(r.ctx, orphanPoll)
		}
	}
}

// waitOrphan blocks until what keeps the job running now may have ended:
// the wrapper, else the command, else (their children left behind) the
// job's cgroup, or one of the processes in its container.
func (r *Registry) waitOrphan(ctx context.Context, id string, pids *pidRecord) error {
	switch {
	case pids.Wrapper.Alive():
		return waitProcExit(ctx, pids.Wrapper)
	case pids.Command.Alive():
		return waitProcExit(ctx, pids.Command)
	}
	if pids.Container != nil && pids.Container.V2Dir != "" {
		return waitCgroupEmpty(ctx, pids.Container.V2Dir)
	}
	c := r.containerOf(ctx, id, pids, false)
	if c == nil {
		return nil
	}
	procs, err := c.Procs()
	if err != nil || len(procs) == 0 {
		return err
	}
	p, err := termination.Identify(procs[0])
	if err != nil {
		return nil // gone meanwhile
	}
	return waitProcExit(ctx, p)
}

// settleOrphan does for an adopted job what its supervisor would have
// done at its end: lets a PTY job's copier drain the terminal for up to
// linger and stops it, names a limit that killed the job, removes its
// container once empty, and writes exit.json (when the exit is known),
// so that a registry opened later finds the job finished.
func (r *Registry) settleOrphan(ctx context.Context, id, dir string, pids *pidRecord, rec *exitRecord, linger time.Duration) {
	if pids.Copier.Alive() {
		lctx, cancel := context.WithTimeout(ctx, linger)
		waitProcExit(lctx, pids.Copier)
		cancel()
		if pids.Copier.Signal(syscall.SIGKILL) == nil {
			kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			waitProcExit(kctx, pids.Copier)
			cancel()
		}
	}
	if c := r.containerOf(ctx, id, pids, false); c != nil {
		if ev := c.LimitEvent(); ev != "" && rec != nil && rec.Status.Code != 0 {
			rec.Status.KilledBy = envs.KillCause(ev)
		}
		if empty, err := c.Empty(); err == nil && empty {
			if err := c.Remove(ctx); err != nil {
				r.log.Warn("procregistry: remove the container of an adopted job", "job", id, "err", err)
			}
		}
	}
	os.Remove(filepath.Join(dir, fileCtl)) // its listener died with the supervisor
	if err := removeCommand(dir); err != nil {
		r.log.Warn("procregistry: adopted job", "job", id, "err", err)
	}
	if rec != nil && rec.Note != "" {
		if err := writeJSON(filepath.Join(dir, fileExit), rec); err != nil {
			r.log.Warn("procregistry: exit record of an adopted job", "job", id, "err", err)
		}
	}
}

// orphanPoll is how often pollUntil looks, where no event can be waited
// for (kernels without pidfds), and how long a failed wait pauses.
const orphanPoll = time.Second

// pollUntil returns once cond holds, looking every orphanPoll, or with
// ctx's error when ctx ends first.
func pollUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := pause(ctx, orphanPoll); err != nil {
			return err
		}
	}
	return nil
}

// pause waits d, or returns ctx's error when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
