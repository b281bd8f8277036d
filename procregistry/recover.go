package procregistry

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// recover rebuilds the registry from its state directory (see the
// package documentation, "Crash safety"). It runs from Open, before any
// other goroutine.
func (r *Registry) recover() error {
	entries, err := os.ReadDir(filepath.Join(r.opts.Dir, "jobs"))
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		dir := filepath.Join(r.opts.Dir, "jobs", e.Name())
		// A job directory that is not what the registry made (a link,
		// another owner, a log that is a link) is left alone: reading or
		// appending to it could reach a file outside the state directory.
		if err := checkJobDir(r.opts.Dir, dir); err != nil {
			r.log.Warn("procregistry: refusing job directory", "dir", dir, "err", err)
			continue
		}
		var rec record
		if ok, err := readJSON(filepath.Join(dir, fileJob), &rec); !ok || err != nil || rec.ID != e.Name() {
			r.log.Warn("procregistry: skipping unreadable job directory", "dir", dir, "err", err)
			continue
		}
		j := &job{
			id: rec.ID, dir: dir, rec: rec,
			started: make(chan struct{}), exitSeen: make(chan struct{}), done: make(chan struct{}),
		}
		close(j.started)
		r.jobs[j.id] = j
		if rec.Key != "" {
			r.keys[rec.Owner+"\x00"+rec.Key] = j.id
		}
		r.recoverJob(j)
	}
	return nil
}

// recoverJob decides a recovered job's status. r.mu is held.
func (r *Registry) recoverJob(j *job) {
	var (
		fail failRecord
		exit exitRecord
		kill killRecord
		lost lostRecord
		pids pidRecord
	)
	if ok, _ := readJSON(filepath.Join(j.dir, fileKill), &kill); ok {
		j.kill = &kill
	}
	hasPIDs, _ := readJSON(filepath.Join(j.dir, filePID), &pids)
	if hasPIDs {
		j.pids = &pids
	}
	finish := func(s Status) {
		j.status = s
		close(j.exitSeen)
		r.finishLocked(j)
	}
	if ok, _ := readJSON(filepath.Join(j.dir, fileStartFail), &fail); ok {
		j.fail = &fail
		finish(StatusFailed)
		return
	}
	if ok, _ := readJSON(filepath.Join(j.dir, fileLost), &lost); ok {
		j.lost, j.ended = lost.Why, lost.Time
		finish(StatusLost)
		return
	}
	if ok, _ := readJSON(filepath.Join(j.dir, fileExit), &exit); ok {
		j.exit = &exit
		finish(j.exitStatusLocked())
		return
	}
	loseIt := func(why string) {
		j.lost = why
		writeJSON(filepath.Join(j.dir, fileLost), lostRecord{Why: why, Time: time.Now()})
		finish(StatusLost)
	}
	if !hasPIDs {
		// The registry that started it died before the supervisor
		// reported; nobody can tell which process is the job's.
		loseIt("the registry stopped before the job's supervisor reported its process")
		return
	}
	// A PID alone proves nothing after a restart: the supervisor counts
	// as alive only with the recorded start time. Without it, the job may
	// still run (adopted, see orphan.go), may have ended with its exit
	// code written by its wrapper, or is lost.
	if !pids.Supervisor.Alive() {
		j.orphaned = true
		rec, running := r.orphanCheck(r.ctx, j, &pids)
		switch {
		case rec != nil:
			r.settleOrphan(r.ctx, j.id, j.dir, &pids, rec, 0)
			j.exit = rec
			finish(j.exitStatusLocked())
			return
		case !running:
			r.settleOrphan(r.ctx, j.id, j.dir, &pids, nil, 0)
			why := lostOrphan
			if pids.Wrapper.PID == 0 {
				why = "the supervisor is gone (or its PID now names another program) and no exit was recorded"
			}
			loseIt(why)
			return
		}
	}
	for _, p := range j.rec.Watch {
		if re, err := regexp.Compile(p); err == nil {
			if j.watch == nil {
				j.watch = newJobWatch(nil)
			}
			j.watch.pats = append(j.watch.pats, re)
			j.watch.disabled = append(j.watch.disabled, false)
			j.watch.patSupp = append(j.watch.patSupp, 0)
		}
	}
	var size int64
	if fi, err := os.Lstat(j.logPath()); err == nil {
		size = fi.Size()
	}
	j.status = StatusRunning
	// Output written while no registry ran is in the log, but it is not
	// matched against watch patterns: matching it now would report old
	// lines as news.
	r.follow(j, size)
}

// reap removes finished jobs beyond the retention time or count, after
// tearing down their containers (killing what is left in them: nothing
// else would ever find it once pid.json is gone). A job whose container
// cannot be torn down is kept, and tried again at the next sweep.
func (r *Registry) reap() {
	now := r.clock.Now()
	r.mu.Lock()
	var fin []*job
	for _, j := range r.jobs {
		if isClosed(j.done) {
			fin = append(fin, j)
		}
	}
	slices.SortFunc(fin, func(a, b *job) int { return b.ended.Compare(a.ended) }) // newest first
	var old []*job
	for i, j := range fin {
		if i >= r.opts.MaxFinished || now.Sub(j.ended) > r.opts.Retention {
			old = append(old, j)
		}
	}
	r.mu.Unlock()
	for _, j := range old {
		if _, err := r.killLeftovers(r.ctx, j, 0); err != nil {
			r.log.Warn("procregistry: job kept: its container could not be torn down", "job", j.id, "err", err)
			continue
		}
		r.mu.Lock()
		delete(r.jobs, j.id)
		if j.rec.Key != "" {
			delete(r.keys, j.rec.Owner+"\x00"+j.rec.Key)
		}
		r.mu.Unlock()
		os.RemoveAll(j.dir)
	}
}
