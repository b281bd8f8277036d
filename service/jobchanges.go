package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/undo"
)

// A background job of a session that records changes is a command of its
// journal like a foreground one: its Begin is taken once the gate has let
// it through and before the registry starts it, and its End when the job
// has finished (exited, killed, lost), or when the session closes,
// whichever comes first. Its steps are labelled "job <id>: <command>".
//
// A job runs while foreground commands (and other jobs) run, and the
// journal cannot tell which process wrote a file: a step made while both
// were open names both, each one's record lists the other in
// Concurrent, and an undo from the job's first step reverts every
// command step from there on, the foreground ones included, and names
// them all in [undo.Undone].Commands. Undo refuses, as for any command,
// when an edit made outside any command touched the same paths.

// jobWaitSlice bounds one wait call on the registry, so that a waiter
// whose connection stalls notices its session closing.
const jobWaitSlice = time.Minute

// jobRetry is the pause before a waiter asks again after a failed wait.
const jobRetry = time.Second

// jobSteps are the open journal commands of a session's background jobs,
// and the waiters that end them. The session owns the waiters: Close
// cancels them and waits for them, and each ends its job's command on
// its way out.
type jobSteps struct {
	mu     sync.Mutex
	steps  map[string]*jobStep // by job id
	closed bool
	ctx    context.Context // the waiters'; cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// jobStep is one job's command in the journal.
type jobStep struct {
	rec  envs.ChangeRecorder
	warn string // why changes are not recorded, from the Begin
	once sync.Once
	res  envs.Result // Changes and Warnings, set once ended
}

// end takes the checkpoint after the job, once; later calls wait for the
// first and return its record.
func (st *jobStep) end(ctx context.Context) (*undo.Record, []string) {
	st.once.Do(func() { endChanges(ctx, st.rec, st.warn, &st.res) })
	return st.res.Changes, st.res.Warnings
}

// beginJobChanges takes the checkpoint before the job req starts, when
// the session records changes, labelled "job: <command>" until the job
// has its id (trackJob). It returns nil when it does not record, or when
// the journal said nothing worth saying.
func (ss *Session) beginJobChanges(ctx context.Context, req procregistry.StartRequest) *jobStep {
	rec, warn := ss.beginChanges(ctx, envs.Command{Shell: "job: " + jobLine(req)})
	if rec == nil && warn == "" {
		return nil
	}
	return &jobStep{rec: rec, warn: warn}
}

// trackJob takes over st once the registry answered the start of the
// job in: a job that runs gets its label and a waiter; one that never
// ran (a refusal, a failed start, an idempotent start of a job that
// already has a step) has its command ended here, with whatever changed
// meanwhile.
func (ss *Session) trackJob(ctx context.Context, jobs Jobs, st *jobStep, in procregistry.Info, err error) {
	if err != nil || in.ID == "" || in.Status == procregistry.StatusFailed {
		st.end(context.WithoutCancel(ctx))
		return
	}
	if r, ok := st.rec.(interface {
		Relabel(context.Context, string) error
	}); ok {
		// A journal that cannot relabel keeps the command's own label.
		if err := r.Relabel(ctx, label(jobLabel(in))); err != nil {
			ss.svc.log.Warn("service: label a job's changes", "job", in.ID, "err", err)
		}
	}
	js := &ss.jobSteps
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.closed || js.steps[in.ID] != nil {
		st.end(context.WithoutCancel(ctx))
		return
	}
	if js.steps == nil {
		js.steps = map[string]*jobStep{}
		js.ctx, js.cancel = context.WithCancel(context.Background())
	}
	js.steps[in.ID] = st
	wctx := js.ctx
	js.wg.Go(func() { waitJobEnd(wctx, jobs, in.ID, st) })
}

// jobLabel names a job's steps: its id and its command.
func jobLabel(in procregistry.Info) string {
	return fmt.Sprintf("job %s: %s", in.ID, in.Command)
}

// waitJobEnd waits until the job id has finished, or until ctx is
// cancelled (the session closes), then ends its command in the journal.
// The checkpoint is taken either way: at session close a job that runs
// on (detached, handed off) stops being recorded, and what it wrote so
// far is its step.
func waitJobEnd(ctx context.Context, jobs Jobs, id string, st *jobStep) {
	defer st.end(context.WithoutCancel(ctx))
	for ctx.Err() == nil {
		_, done, err := jobs.Wait(ctx, id, jobWaitSlice)
		switch {
		case err == nil && done:
			return
		case errors.Is(err, envs.ErrNotFound):
			return // the registry forgot it: nothing more will come
		case err != nil:
			t := time.NewTimer(jobRetry)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// jobChanges returns the change record of the session's job id once it
// has finished: it ends the job's command here if its waiter has not yet
// (a result must not depend on which comes first). It returns nothing
// for a job that is not recorded or still runs.
func (ss *Session) jobChanges(ctx context.Context, id string, finished bool) (*undo.Record, []string) {
	js := &ss.jobSteps
	js.mu.Lock()
	st := js.steps[id]
	js.mu.Unlock()
	if st == nil || !finished {
		return nil, nil
	}
	return st.end(context.WithoutCancel(ctx))
}

// closeJobSteps stops the waiters, each ending its job's command first,
// and waits for them. Later jobs are not recorded.
func (ss *Session) closeJobSteps() {
	js := &ss.jobSteps
	js.mu.Lock()
	js.closed = true
	if js.cancel != nil {
		js.cancel()
	}
	js.mu.Unlock()
	js.wg.Wait()
}

// Changes says what the session's job in changed in the workspace (nil
// while it runs, or when its changes are not recorded), with the
// journal's warnings about it. Asked about a finished job whose step is
// still open, it closes the step, so the answer holds all the job did.
func (o *OwnedJobs) Changes(ctx context.Context, in procregistry.Info) (*undo.Record, []string) {
	if in.Owner != o.Owner() {
		return nil, nil
	}
	return o.ss.jobChanges(ctx, in.ID, in.Status.Finished())
}

// CompletionChanges is [OwnedJobs.Changes] for the job a completion
// event of the session's is about; nothing for any other event.
func (o *OwnedJobs) CompletionChanges(ctx context.Context, ev procregistry.Event) (*undo.Record, []string) {
	if ev.Type != procregistry.EventCompletion || ev.Consumer != o.Owner() {
		return nil, nil
	}
	return o.ss.jobChanges(ctx, ev.Job, true)
}
