package procregistry

import (
	"fmt"
	"os"
	"time"
)

// Defaults and floors of the idle notices (see [StartRequest].QuietAfter,
// InputWait and NoOutputTimeout).
const (
	// MinIdle is the floor of QuietAfter, InputWait and NoOutputTimeout:
	// shorter values are raised to it.
	MinIdle = 500 * time.Millisecond
	// DefaultNoticeGap is the default of [Options].NoticeGap.
	DefaultNoticeGap = 5 * time.Second
	// KilledByNoOutput is the KilledBy of a job ended by its
	// NoOutputTimeout.
	KilledByNoOutput = "no-output-timeout"
	// inputProbe is how soon a quiet job is looked at again when it was
	// not waiting for input; the interval doubles while it stays that
	// way, up to inputProbeMax, which is also how often a job known to
	// wait is looked at to see the wait end without a write.
	inputProbe    = 250 * time.Millisecond
	inputProbeMax = 8 * time.Second
)

// idle is the state of one job's idle loop (its goroutine only).
type idle struct {
	size                 int64
	lastOut              time.Time // last growth of the log (or the start of watching)
	lastIn               time.Time // last write to stdin through the registry
	quietSent, inputSent bool      // an event was sent in this episode
	quietAt, inputAt     time.Time // when the last one was sent
	probeAt              time.Time // next look at /proc
	probeEvery           time.Duration
}

// floorIdle raises a positive idle duration to MinIdle.
func floorIdle(d time.Duration) time.Duration {
	if d > 0 && d < MinIdle {
		return MinIdle
	}
	return d
}

// wantsIdle reports whether a job has any of the idle notices.
func (rec *record) wantsIdle() bool {
	return rec.QuietAfter > 0 || rec.InputWait > 0 || rec.NoOutputTimeout > 0
}

// idleLoop watches a running job for silence: a quiet event after
// QuietAfter without output, a waiting-for-input event when one of its
// processes has been blocked reading its stdin for InputWait with no
// output and no write, and the end of the job after NoOutputTimeout
// without output. Each kind of event comes once per episode: output
// re-arms both, a write to the job's stdin re-arms waiting-for-input,
// and a look that finds the job no longer waiting does too; two events
// of one kind for a job are at least [Options].NoticeGap apart. It is
// woken by the log's writes (inotify; without it, it looks every
// PollInterval) and by its deadlines on the registry's clock, and ends
// with the job or the registry.
func (r *Registry) idleLoop(j *job, from int64) {
	changed, stop := r.logChanges(j.logPath())
	defer stop()
	now := r.clock.Now()
	st := idle{size: from, lastOut: now, probeEvery: inputProbe}
	for {
		now = r.clock.Now()
		if r.idleStep(j, &st, now) {
			return
		}
		wait := r.idleNext(j, &st, now).Sub(now)
		t := r.clock.NewTimer(max(wait, time.Millisecond))
		var poll <-chan time.Time
		var pt *time.Timer
		if changed == nil {
			pt = time.NewTimer(r.opts.PollInterval)
			poll = pt.C
		}
		select {
		case <-t.C():
		case <-changed:
		case <-poll:
		case <-j.wrote:
			// The agent answered: a new wait is a new episode, without
			// the gap.
			st.lastIn, st.inputSent, st.inputAt = r.clock.Now(), false, time.Time{}
			st.probeAt, st.probeEvery = time.Time{}, inputProbe
		case <-j.exitSeen:
		case <-r.ctx.Done():
		}
		t.Stop()
		if pt != nil {
			pt.Stop()
		}
		if isClosed(j.exitSeen) || r.ctx.Err() != nil {
			return
		}
	}
}

// idleStep looks at the job now and sends what is due. It reports true
// when the loop is over (the job was ended for its silence).
func (r *Registry) idleStep(j *job, st *idle, now time.Time) bool {
	rec := &j.rec
	if fi, err := os.Lstat(j.logPath()); err == nil && fi.Size() > st.size {
		st.size, st.lastOut = fi.Size(), now
		st.quietSent, st.inputSent = false, false
		st.probeAt, st.probeEvery = time.Time{}, inputProbe
	}
	silent := now.Sub(st.lastOut)
	if rec.NoOutputTimeout > 0 && silent >= rec.NoOutputTimeout {
		r.endSilent(j)
		return true
	}
	gap := r.opts.NoticeGap
	if rec.QuietAfter > 0 && !st.quietSent && silent >= rec.QuietAfter && now.Sub(st.quietAt) >= gap {
		st.quietSent, st.quietAt = true, now
		r.idleEvent(j, EventQuiet, fmt.Sprintf("no output for %v", silent.Round(time.Second/10)))
	}
	if rec.InputWait <= 0 || now.Before(st.probeAt) {
		return false
	}
	idleFor := min(silent, now.Sub(st.lastIn))
	if idleFor < rec.InputWait || (!st.inputSent && now.Sub(st.inputAt) < gap) {
		return false
	}
	r.mu.Lock()
	pids := j.pids
	r.mu.Unlock()
	pid := waitingForInput(pids)
	switch {
	case pid != 0 && !st.inputSent:
		st.inputSent, st.inputAt, st.probeEvery = true, now, inputProbeMax
		r.idleEvent(j, EventWaitingForInput, fmt.Sprintf("process %d is blocked reading the job's stdin, with no output for %v", pid, silent.Round(time.Second/10)))
	case pid == 0 && st.inputSent:
		st.inputSent, st.probeEvery = false, inputProbe // it went on without a write
	case pid == 0:
		st.probeEvery = min(2*st.probeEvery, inputProbeMax)
	}
	st.probeAt = now.Add(st.probeEvery)
	return false
}

// idleNext is when the loop must look again at the latest.
func (r *Registry) idleNext(j *job, st *idle, now time.Time) time.Time {
	rec := &j.rec
	next := now.Add(time.Hour)
	at := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	if rec.NoOutputTimeout > 0 {
		at(st.lastOut.Add(rec.NoOutputTimeout))
	}
	if rec.QuietAfter > 0 && !st.quietSent {
		at(later(st.lastOut.Add(rec.QuietAfter), st.quietAt.Add(r.opts.NoticeGap)))
	}
	if rec.InputWait > 0 {
		due := later(st.lastOut, st.lastIn).Add(rec.InputWait)
		if !st.inputSent {
			due = later(due, st.inputAt.Add(r.opts.NoticeGap))
		}
		at(later(due, st.probeAt))
	}
	return next
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// idleEvent sends a quiet or waiting-for-input event with the tail of
// the output.
func (r *Registry) idleEvent(j *job, typ EventType, msg string) {
	off, tail := readTail(j.logPath(), TailBytes)
	r.mu.Lock()
	defer r.mu.Unlock()
	if isClosed(j.exitSeen) {
		return // its completion says the rest
	}
	r.emitLocked(&Event{
		Type: typ, Consumer: j.rec.Owner, Job: j.id, Command: j.rec.command(),
		Offset: off, Tail: tail, Message: msg,
	})
}

// endSilent ends a job whose NoOutputTimeout passed: a kill like any
// other (the whole tree, then the container), recorded as the timeout's.
func (r *Registry) endSilent(j *job) {
	r.log.Info("procregistry: no output timeout", "job", j.id, "after", j.rec.NoOutputTimeout)
	if _, err := r.kill(r.ctx, j.id, KilledByNoOutput); err != nil {
		r.log.Warn("procregistry: no output timeout", "job", j.id, "err", err)
	}
}

// noteWrite tells the job's idle loop that its stdin was written.
func (j *job) noteWrite() {
	if j.wrote == nil {
		return
	}
	select {
	case j.wrote <- struct{}{}:
	default:
	}
}
