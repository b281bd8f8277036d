package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// A command that yields is started as a background job from the outset
// and waited for up to its yield time. Starting it as a job, instead of
// running it in the foreground and moving it later, means there is one
// path for its output, its notices and its teardown whether it yields or
// not: the job's log is the output, the registry's completion event is
// the notice, and the session's end kills it like any job of the session.

// YieldResult is what a command that yields returns, or what a later
// look at its job with [OwnedJobs.PollYield] returns.
type YieldResult struct {
	// Job is the job as it was when the call returned.
	Job procregistry.Info `json:"job"`
	// Done is true when the job had finished: Job.Exit holds how (unless
	// it was lost or failed to start), and Output is the end of it.
	Done bool `json:"done"`
	// Output is the job's output from From to Next, bounded by the output
	// limit like a foreground result's: over it, the first 40% and the
	// last 60% with one line saying how much was left out between them.
	Output string `json:"output"`
	// From and Next are the byte offsets of the log Output covers:
	// reading the job's log from Next continues it.
	From int64 `json:"from"`
	Next int64 `json:"next"`
	// Truncated is true when Output left bytes out.
	Truncated bool `json:"truncated,omitempty"`
}

// ExitCode is the job's exit code when it finished with one, else -1.
func (r YieldResult) ExitCode() int {
	if r.Done && r.Job.Exit != nil {
		return r.Job.Exit.Code
	}
	return -1
}

// holdState is where a yielding start stands with its job's completion
// event. Every read and write happens under OwnedJobs.eventMu, the lock
// that also serialises delivery, so the decision and the delivery cannot
// interleave.
type holdState int

const (
	// holdPending: the start is waiting out its yield time.
	holdPending holdState = iota
	// holdReturned: the start returned the job's end as its result; the
	// completion event, when it comes, is acknowledged unsent.
	holdReturned
	// holdDropped: the completion event came while pending and was
	// acknowledged unsent. The registry queues it only once the job's
	// final status is visible, so the decision that follows always finds
	// the job finished and returns its end: nothing is lost.
	holdDropped
)

// StartYield judges and starts req as the session's job (see
// [OwnedJobs.Start]), with a completion notice (req.Notify is set), then
// waits for it up to yield.
//
// A job that finishes within yield comes back with Done set, its output
// and its exit status, like a foreground result, and its completion
// notice is never delivered ([OwnedJobs.Deliver] and
// [OwnedJobs.TakeEvents] acknowledge it unsent): the caller has the end
// exactly once. A job still running comes back with the output so far
// and its id, and carries on as a job of the class req.Lifetime names
// (the session's by default): its completion notice comes once, through
// the session's delivery. Until the yield passes the job is of class
// [procregistry.LifetimeCommand]: when ctx ends first (the caller went
// away) the job is killed, as a foreground command would be, and the
// session is told of it by a completion notice.
//
// limit bounds Output (zero or less: [envs.DefaultOutputLimit]). yield
// must be positive. The job runs in req.Dir: it does not see or change
// a session's shell state (cd, export) the way [Session.Run] does.
func (o *OwnedJobs) StartYield(ctx context.Context, req procregistry.StartRequest, yield time.Duration, limit int) (YieldResult, error) {
	if yield <= 0 {
		return YieldResult{}, fmt.Errorf("service: yield %v: %w: want a positive duration", yield, envs.ErrBadCommand)
	}
	req.Notify = true
	later, err := procregistry.ParseLifetime(string(req.Lifetime))
	if err != nil {
		return YieldResult{}, fmt.Errorf("service: %w", err)
	}
	// Until it yields, the job is the command's: a caller gone before
	// then takes it along, as it would a foreground command.
	req.Lifetime = procregistry.LifetimeCommand
	info, err := o.startHeld(ctx, req)
	if err != nil {
		return YieldResult{}, err
	}
	id := info.ID
	if info.Status == procregistry.StatusFailed {
		o.decide(context.WithoutCancel(ctx), id, true)
		return YieldResult{Job: info, Done: true, Output: info.Error}, nil
	}
	_, _, werr := o.jobs.Wait(ctx, id, yield)
	bg := context.WithoutCancel(ctx)
	if werr != nil {
		// The caller is gone: its command ends with it. The hold ends
		// first, without a result, so the kill's completion goes out as
		// a notice and the session still learns of it.
		_, info, _ := o.decide(bg, id, false)
		if _, err := o.jobs.Kill(bg, id); err != nil {
			werr = errors.Join(werr, fmt.Errorf("ending it: %w", err))
		}
		return YieldResult{Job: info}, fmt.Errorf("service: waiting for job %s: %w", id, werr)
	}
	yerr := o.yielded(bg, id, later)
	done, info, derr := o.decide(bg, id, yerr == nil)
	if yerr != nil {
		return YieldResult{Job: info}, yerr
	}
	if derr != nil {
		return YieldResult{Job: info}, derr
	}
	res, err := readYield(ctx, o.jobs, info, 0, limit)
	if err != nil {
		return res, err
	}
	res.Done = done
	return res, nil
}

// yielded gives job id, still running when its yield passed or finished
// within it, the class the start asked for. A job that finished in the
// meantime keeps its class: nothing outlives anything then.
func (o *OwnedJobs) yielded(ctx context.Context, id string, l procregistry.Lifetime) error {
	_, err := o.jobs.SetLifetime(ctx, id, l)
	if err == nil {
		return nil
	}
	if in, gerr := o.jobs.Get(ctx, id); gerr == nil && in.Status.Finished() {
		return nil
	}
	return fmt.Errorf("service: job %s: %w", id, err)
}

// startHeld starts req as OwnedJobs.Start does, and registers the job's
// completion as held before any delivery can see the job's events: the
// event lock is taken after the gate (which may wait on a person's
// answer) and before the registry starts the job.
func (o *OwnedJobs) startHeld(ctx context.Context, req procregistry.StartRequest) (procregistry.Info, error) {
	o.startMu.Lock()
	defer o.startMu.Unlock()
	req.Owner = o.Owner()
	locked := false
	var step *jobStep
	connect := func(ctx context.Context) (Jobs, error) {
		if err := o.checkCap(ctx); err != nil {
			return nil, err
		}
		// The checkpoint before the job (jobchanges.go), taken before
		// the event lock: deliveries need not wait for a walk.
		step = o.ss.beginJobChanges(ctx, req)
		o.eventMu.Lock()
		locked = true
		return startToEnd{o.jobs}, nil
	}
	info, err := o.ss.svc.StartJob(ctx, connect, o.target, req)
	if locked {
		if err == nil {
			if o.holds == nil {
				o.holds = map[string]holdState{}
			}
			o.holds[info.ID] = holdPending
		}
		o.eventMu.Unlock()
	}
	if step != nil {
		o.ss.trackJob(ctx, o.jobs, step, info, err)
	}
	if err != nil {
		return info, err
	}
	return o.keepAwake(ctx, info), nil
}

// startToEnd starts a job whatever becomes of the caller meanwhile: once
// the gate let it through, a start cut short could leave a job running
// whose id nobody learned, so nobody would end it. The caller checks its
// context after the start, and ends the job itself.
type startToEnd struct{ Jobs }

func (s startToEnd) Start(ctx context.Context, req procregistry.StartRequest) (procregistry.Info, error) {
	return s.Jobs.Start(context.WithoutCancel(ctx), req)
}

// decide ends the hold on id's completion: a finished job's end is the
// caller's result when returning is true (its event is dropped), a
// running job's event will be delivered. It reports whether the job had
// finished, and the job.
func (o *OwnedJobs) decide(ctx context.Context, id string, returning bool) (bool, procregistry.Info, error) {
	o.eventMu.Lock()
	defer o.eventMu.Unlock()
	state, held := o.holds[id]
	delete(o.holds, id)
	info, err := o.jobs.Get(ctx, id)
	if err != nil {
		// Unknown: with the hold gone the notice goes through.
		return false, info, fmt.Errorf("service: job %s: %w", id, err)
	}
	done := info.Status.Finished()
	if done && returning && held && state == holdPending {
		o.holds[id] = holdReturned
	}
	return done, info, nil
}

// dropHeld reports whether ev is the completion of a job whose end a
// yielding start returns (or is about to), so it must not be delivered.
// o.eventMu must be held.
func (o *OwnedJobs) dropHeld(ev procregistry.Event) bool {
	if ev.Type != procregistry.EventCompletion {
		return false
	}
	state, ok := o.holds[ev.Job]
	if !ok {
		return false
	}
	if state == holdPending {
		o.holds[ev.Job] = holdDropped
	} else {
		delete(o.holds, ev.Job)
	}
	return true
}

// PollYield waits up to yield for the session's job id to write output
// past the offset from, or to finish, and returns what it wrote from
// there (bounded by limit, as in [OwnedJobs.StartYield]). A negative from
// means the log's end when the call begins. Zero yield looks without
// waiting. A finished job's completion notice is delivered as usual:
// PollYield is a look, not the job's one result.
func (o *OwnedJobs) PollYield(ctx context.Context, id string, from int64, yield time.Duration, limit int) (YieldResult, error) {
	info, err := o.Get(ctx, id)
	if err != nil {
		return YieldResult{}, err
	}
	return WaitOutput(ctx, o.jobs, info.ID, from, yield, limit)
}

// LogSize is the length of the session's job id's output now: the from
// to give [OwnedJobs.PollYield] to see only what comes after.
func (o *OwnedJobs) LogSize(ctx context.Context, id string) (int64, error) {
	info, err := o.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	return logSize(ctx, o.jobs, info.ID)
}

// logSize is the length of job id's log now. The read starts past any
// log's end, so it reads nothing.
func logSize(ctx context.Context, jobs Jobs, id string) (int64, error) {
	ch, err := jobs.ReadLog(ctx, id, math.MaxInt64, 1)
	if err != nil {
		return 0, fmt.Errorf("service: job %s: %w", id, err)
	}
	return ch.Size, nil
}

// WaitOutput waits up to yield for job id on jobs to write output past
// from, or to finish, and returns its output from there (see
// [OwnedJobs.PollYield]). It is the registry-level form, for front ends
// that reach a job daemon directly (the CLI's jobs are not a session's).
func WaitOutput(ctx context.Context, jobs Jobs, id string, from int64, yield time.Duration, limit int) (YieldResult, error) {
	if from < 0 {
		size, err := logSize(ctx, jobs, id)
		if err != nil {
			return YieldResult{}, err
		}
		from = size
	}
	if yield > 0 {
		if err := awaitOutput(ctx, jobs, id, from, yield); err != nil {
			return YieldResult{}, err
		}
	}
	info, err := jobs.Get(ctx, id)
	if err != nil {
		return YieldResult{}, fmt.Errorf("service: job %s: %w", id, err)
	}
	res, err := readYield(ctx, jobs, info, from, limit)
	res.Done = info.Status.Finished()
	return res, err
}

// WaitYield waits up to yield for job id on jobs to finish and returns
// its output from the start, bounded by limit (see [YieldResult]). It is
// the registry-level form of [OwnedJobs.StartYield]'s wait, for a job
// that no session's delivery watches (the CLI's): it holds back no
// notice.
func WaitYield(ctx context.Context, jobs Jobs, id string, yield time.Duration, limit int) (YieldResult, error) {
	info, done, err := jobs.Wait(ctx, id, yield)
	if err != nil {
		return YieldResult{}, fmt.Errorf("service: waiting for job %s: %w", id, err)
	}
	res, err := readYield(ctx, jobs, info, 0, limit)
	res.Done = done
	return res, err
}

// errNewOutput stops a follow at the first byte past its offset.
var errNewOutput = errors.New("service: new output")

// firstWrite fails its first write, ending the follow that writes to it.
type firstWrite struct{ seen bool }

func (w *firstWrite) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.seen = true
	return 0, errNewOutput
}

// awaitOutput returns once job id has output past from, has finished, or
// yield has passed. Only a failure to reach the job is an error.
func awaitOutput(ctx context.Context, jobs Jobs, id string, from int64, yield time.Duration) error {
	fctx, cancel := context.WithTimeout(ctx, yield)
	defer cancel()
	w := &firstWrite{}
	_, err := jobs.Follow(fctx, id, from, w)
	switch {
	case err == nil, w.seen, fctx.Err() != nil && ctx.Err() == nil:
		return nil
	}
	return fmt.Errorf("service: waiting for output of job %s: %w", id, err)
}

// readYield reads info's job's output from from to the log's end, within
// limit: the first 40% and the last 60% when it is longer.
func readYield(ctx context.Context, jobs Jobs, info procregistry.Info, from int64, limit int) (YieldResult, error) {
	if limit <= 0 {
		limit = envs.DefaultOutputLimit
	}
	res := YieldResult{Job: info, From: from, Next: from}
	ch, err := jobs.ReadLog(ctx, info.ID, from, limit)
	if err != nil {
		return res, fmt.Errorf("service: reading the output of job %s: %w", info.ID, err)
	}
	res.Output, res.Next = string(ch.Data), ch.Next
	if ch.Next >= ch.Size {
		return res, nil
	}
	head := limit * 2 / 5
	tailLen := limit - head
	tail, err := jobs.ReadLog(ctx, info.ID, max(ch.Size-int64(tailLen), from), tailLen)
	if err != nil {
		return res, fmt.Errorf("service: reading the output of job %s: %w", info.ID, err)
	}
	skipped := tail.Offset - (from + int64(head))
	res.Output = fmt.Sprintf("%s\n[... %d bytes left out: read the job's log from offset %d for them ...]\n%s", ch.Data[:head], skipped, from+int64(head), tail.Data)
	res.Next, res.Truncated = tail.Next, true
	return res, nil
}
