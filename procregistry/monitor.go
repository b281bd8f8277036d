package procregistry

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// monitor learns how a running job ends. It asks the supervisor's control
// socket to answer when the command has exited; the answer, or the
// socket closing (which the kernel does even when the supervisor is
// SIGKILLed), wakes it at once. Then exit.json decides: present, the job
// exited; absent with the supervisor gone, the job is adopted
// (followOrphan): it runs on without its supervisor.
func (r *Registry) monitor(j *job) {
	r.mu.Lock()
	pids := j.pids
	r.mu.Unlock()
	backoff := 20 * time.Millisecond
	for {
		resp, err := ctlCall(r.ctx, j.dir, ctlRequest{Op: opWait})
		if r.ctx.Err() != nil {
			return
		}
		rec := resp.Exit
		if err != nil || rec == nil {
			rec = readExit(j.dir)
		}
		if rec != nil {
			r.conclude(j, rec, "")
			return
		}
		if !pids.Supervisor.Alive() {
			r.followOrphan(j)
			return
		}
		// The supervisor lives but its socket does not answer: it is
		// dying, or it has no socket. Wait for it to end, and ask again
		// after a while in case it answers after all.
		ctx, cancel := context.WithTimeout(r.ctx, backoff)
		waitProcExit(ctx, pids.Supervisor)
		cancel()
		if r.ctx.Err() != nil {
			return
		}
		backoff = min(2*backoff, time.Minute)
	}
}

func readExit(dir string) *exitRecord {
	var rec exitRecord
	if ok, _ := readJSON(filepath.Join(dir, fileExit), &rec); ok {
		return &rec
	}
	return nil
}

// conclude records the end of a running job (rec, or lostWhy when its
// end cannot be known), waits for its follower to read the log to the
// end, so that every watch event comes before the completion, and
// finishes it. If the registry closes meanwhile the job is left for the
// next one, which finds exit.json (or finds the job lost) again.
func (r *Registry) conclude(j *job, rec *exitRecord, lostWhy string) {
	r.mu.Lock()
	if rec != nil {
		j.exit = rec
	} else {
		j.lost = lostWhy
	}
	close(j.exitSeen)
	drained := j.drained
	r.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-r.ctx.Done():
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec != nil {
		j.status = j.exitStatusLocked()
	} else {
		j.status = StatusLost
		writeJSON(filepath.Join(j.dir, fileLost), lostRecord{Why: lostWhy, Time: time.Now()})
	}
	r.finishLocked(j)
}

// exitStatusLocked is exited or killed: killed when a kill was asked for
// before the command's exit.
func (j *job) exitStatusLocked() Status {
	if j.kill != nil && !j.exit.Ended.Before(j.kill.Time) {
		return StatusKilled
	}
	return StatusExited
}

// finishLocked marks j finished and sends its completion event, once.
// r.mu must be held and j.status final.
func (r *Registry) finishLocked(j *job) {
	select {
	case <-j.done:
		return
	default:
	}
	if j.ended.IsZero() {
		switch {
		case j.exit != nil && j.status != StatusLost:
			j.ended = j.exit.Ended
		case j.fail != nil:
			j.ended = j.fail.Time
		default:
			j.ended = time.Now()
		}
	}
	close(j.done)
	if !j.rec.Notify {
		return
	}
	ev := &Event{
		Type: EventCompletion, Consumer: j.rec.Owner, Job: j.id, Time: r.clock.Now(),
		Reason: j.status.reason(), Command: j.rec.command(),
	}
	switch j.status {
	case StatusExited, StatusKilled:
		st := j.exit.Status
		ev.Exit = &st
		ev.KilledBy = string(st.KilledBy)
		if j.status == StatusKilled {
			ev.KilledBy = j.kill.By
			if j.kill.By == KilledByNoOutput {
				ev.Reason = ReasonNoOutputTimeout
				ev.Message = fmt.Sprintf("no output for %v", j.rec.NoOutputTimeout)
			}
		}
	case StatusFailed:
		st := j.fail.Status
		ev.Exit = &st
		ev.Message = j.fail.Error
	case StatusLost:
		ev.Message = j.lost
	}
	ev.Offset, ev.Tail = readTail(j.logPath(), TailBytes)
	if err := r.ev.complete(ev); err != nil {
		r.log.Warn("procregistry: completion event", "job", j.id, "err", err)
	}
}
