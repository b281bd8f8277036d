package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// ErrLimit is matched by errors that report a configured cap reached
// (sessions per server, live jobs per session). Nothing was started.
var ErrLimit = errors.New("service: limit reached")

// SessionJobs is a job registry that can also end an owner's session:
// what a front end needs to hand a session's jobs over to it and to clean
// up after it. The local job daemon's client is one.
type SessionJobs interface {
	Jobs
	Poll(ctx context.Context, id string) (procregistry.Poll, error)
	EndSession(ctx context.Context, owner string) ([]procregistry.KillResult, error)
}

var _ SessionJobs = (*procregistry.Client)(nil)

// Owner is the name under which the session's background jobs are
// registered and their events queued. It is the session's id, which is
// also the gate's session key: a "this session" approval given for a
// foreground command holds for the session's jobs too.
func (ss *Session) Owner() string { return ss.ID }

// OwnedJobs are the background jobs of one session on one registry (the
// local job daemon's, or the one in the session's sandbox: see
// [Session.SandboxJobs]). Every
// method acts only on jobs the session owns: another owner's job is "not
// found", so sessions that share a registry cannot see or touch each
// other's jobs. On a job daemon this is also enforced by the daemon,
// which holds the session's owner for the session's token alone. It is
// safe for concurrent use.
type OwnedJobs struct {
	ss     *Session
	jobs   SessionJobs
	target JobTarget
	max    int

	startMu sync.Mutex // serialises the live-job count and the start
	eventMu sync.Mutex // one delivery of the queue at a time (see events.go)
	// holds are the jobs of yielding starts whose completion events must
	// not be delivered while, or once, their end is a start's result
	// (see yield.go). Guarded by eventMu.
	holds map[string]holdState
}

// OwnedJobsOptions describe where a session's jobs run.
type OwnedJobsOptions struct {
	// Backend names where the registry runs its jobs, for the gate.
	// Empty means "local".
	Backend string
	// HostAccess is true when those jobs can touch this machine. The
	// local job daemon's can.
	HostAccess bool
	// MaxLive caps the session's jobs that are starting or running. Zero
	// means no cap.
	MaxLive int
}

// Jobs returns the session's view of jobs. The session's asker answers
// the gate's questions about the jobs it starts. A job daemon's client
// (a *procregistry.Client without a token) is given a fresh token for the
// session's owner ([procregistry.Client.As]), so the daemon lets no other
// session, and no command a session runs, reach the session's jobs (see
// "Owners" in package procregistry).
func (ss *Session) Jobs(jobs SessionJobs, opts OwnedJobsOptions) *OwnedJobs {
	backend := opts.Backend
	if backend == "" {
		backend = localBackend
	}
	if c, ok := jobs.(*procregistry.Client); ok && c.Token == "" {
		// The registry then refuses the session's jobs to every caller
		// but this one and the processes of those jobs: the token stays
		// in this process's memory.
		jobs = c.As(ss.Owner())
	}
	return &OwnedJobs{
		ss: ss, jobs: jobs, max: opts.MaxLive,
		target: JobTarget{Backend: backend, HostAccess: opts.HostAccess, Asker: ss.ask, session: ss},
	}
}

// Owner is the owner name the jobs are registered under.
func (o *OwnedJobs) Owner() string { return o.ss.Owner() }

// Backend names where the jobs run: "local", or the backend of the
// sandbox whose registry holds them.
func (o *OwnedJobs) Backend() string { return o.target.Backend }

// OnThisMachine reports whether the jobs run on this machine, where a
// directory is one of this machine's.
func (o *OwnedJobs) OnThisMachine() bool { return o.ss.svc.onThisMachine(o.target.Backend) }

// Start judges req's command, checks the live-job cap, and starts it as
// the session's job (req.Owner is set here; whatever it held is ignored).
// The registry is reached only once the gate has let the command
// through: a registry in the session's sandbox (and the sandbox itself)
// is not started for a command the gate refuses.
func (o *OwnedJobs) Start(ctx context.Context, req procregistry.StartRequest) (procregistry.Info, error) {
	o.startMu.Lock()
	defer o.startMu.Unlock()
	req.Owner = o.Owner()
	var step *jobStep
	connect := func(ctx context.Context) (Jobs, error) {
		if err := o.checkCap(ctx); err != nil {
			return nil, err
		}
		// Admitted: the job's checkpoint comes before its first byte
		// runs (see jobchanges.go).
		step = o.ss.beginJobChanges(ctx, req)
		return o.jobs, nil
	}
	in, err := o.ss.svc.StartJob(ctx, connect, o.target, req)
	if step != nil {
		o.ss.trackJob(ctx, o.jobs, step, in, err)
	}
	if err != nil {
		return in, err
	}
	return o.keepAwake(ctx, in), nil
}

// checkCap refuses a start when the session has MaxLive live jobs.
func (o *OwnedJobs) checkCap(ctx context.Context) error {
	if o.max <= 0 {
		return nil
	}
	live, err := o.live(ctx)
	if err != nil {
		return err
	}
	if live >= o.max {
		return fmt.Errorf("service: session %s has %d live background jobs (the cap is %d): wait for one or kill one first: %w", o.ss.ID, live, o.max, ErrLimit)
	}
	return nil
}

// live counts the session's jobs that have not finished.
func (o *OwnedJobs) live(ctx context.Context) (int, error) {
	list, err := o.jobs.List(ctx, o.Owner())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, in := range list {
		if !in.Status.Finished() {
			n++
		}
	}
	return n, nil
}

// List returns the session's jobs.
func (o *OwnedJobs) List(ctx context.Context) ([]procregistry.Info, error) {
	return o.jobs.List(ctx, o.Owner())
}

// Get returns the session's job id (a unique prefix will do). A job of
// another owner is not found.
func (o *OwnedJobs) Get(ctx context.Context, id string) (procregistry.Info, error) {
	in, err := o.jobs.Get(ctx, id)
	if err != nil {
		return procregistry.Info{}, err
	}
	if in.Owner != o.Owner() {
		return procregistry.Info{}, fmt.Errorf("service: job %s: %w", id, envs.ErrNotFound)
	}
	return in, nil
}

// Poll returns the job's state and the tail of its output.
func (o *OwnedJobs) Poll(ctx context.Context, id string) (procregistry.Poll, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Poll{}, err
	}
	return o.jobs.Poll(ctx, in.ID)
}

// ReadLog reads up to limit bytes of the job's output from offset.
func (o *OwnedJobs) ReadLog(ctx context.Context, id string, offset int64, limit int) (procregistry.Chunk, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Chunk{}, err
	}
	return o.jobs.ReadLog(ctx, in.ID, offset, limit)
}

// TailLines reads the job's last n lines of output.
func (o *OwnedJobs) TailLines(ctx context.Context, id string, n int) (procregistry.Chunk, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Chunk{}, err
	}
	return o.jobs.TailLines(ctx, in.ID, n)
}

// Wait waits for the job to finish, at most timeout (zero: no limit).
func (o *OwnedJobs) Wait(ctx context.Context, id string, timeout time.Duration) (procregistry.Info, bool, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Info{}, false, err
	}
	return o.jobs.Wait(ctx, in.ID, timeout)
}

// Kill kills the job's whole tree.
func (o *OwnedJobs) Kill(ctx context.Context, id string) (procregistry.KillResult, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.KillResult{}, err
	}
	return o.jobs.Kill(ctx, in.ID)
}

// Write judges text as a command, then writes it to the job's stdin
// (with a line end when submit is true): see [Service.WriteJob].
func (o *OwnedJobs) Write(ctx context.Context, id, text string, submit bool) error {
	in, err := o.Get(ctx, id)
	if err != nil {
		return err
	}
	return o.ss.svc.WriteJob(ctx, o.jobs, o.target, in.ID, text, submit)
}

// CloseStdin sends end-of-file to the job's stdin.
func (o *OwnedJobs) CloseStdin(ctx context.Context, id string) error {
	in, err := o.Get(ctx, id)
	if err != nil {
		return err
	}
	return o.jobs.CloseStdin(ctx, in.ID)
}

// Handoff gives the job to owner, so it outlives the session and owner
// receives its events from now on.
func (o *OwnedJobs) Handoff(ctx context.Context, id, owner, note string) (procregistry.Info, error) {
	if owner == "" || owner == o.Owner() {
		return procregistry.Info{}, fmt.Errorf("service: handoff of %s: %w: name another owner", id, envs.ErrBadCommand)
	}
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Info{}, err
	}
	return o.jobs.Handoff(ctx, in.ID, owner, note)
}

// SetLifetime changes the class of the session's job id while it runs
// (see [procregistry.Lifetime]): made detached or keep-awake it outlives
// the session, made the session's it ends with it.
func (o *OwnedJobs) SetLifetime(ctx context.Context, id string, l procregistry.Lifetime) (procregistry.Info, error) {
	in, err := o.Get(ctx, id)
	if err != nil {
		return procregistry.Info{}, err
	}
	in, err = o.jobs.SetLifetime(ctx, in.ID, l)
	if err != nil {
		return in, err
	}
	return o.keepAwake(ctx, in), nil
}

// KeepsAwake reports whether a job of the session that keeps its sandbox
// awake ([procregistry.LifetimeKeepAwake]) is running: the session's
// sandbox is then in use, whatever its idle time.
func (o *OwnedJobs) KeepsAwake(ctx context.Context) (bool, error) {
	list, err := o.jobs.List(ctx, o.Owner())
	if err != nil {
		return false, err
	}
	for _, in := range list {
		if in.Lifetime.KeepsAwake() && !in.Status.Finished() {
			return true, nil
		}
	}
	return false, nil
}

// End kills the session's jobs whose lifetime is the session (or the
// command that started them); detached, keep-awake and handed-off jobs
// run on.
func (o *OwnedJobs) End(ctx context.Context) ([]procregistry.KillResult, error) {
	return o.jobs.EndSession(ctx, o.Owner())
}
