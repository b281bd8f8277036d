package jobtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// Session is one session of the backend under test, opened for one check.
type Session struct {
	// Session is the runbox session. The suite ends it (see [Run]); the
	// cleanup of [Backend].Open must not depend on whether it did.
	Session *service.Session
	// Jobs are the session's background jobs where its commands run:
	// Session.Jobs over the local job daemon, or Session.SandboxJobs.
	Jobs *service.OwnedJobs
}

// Backend is what [Run] needs of the backend under test.
type Backend struct {
	// Open opens a fresh session for one check. Its cleanup (t.Cleanup)
	// removes what a session leaves behind on purpose: detached jobs on
	// a sandbox that outlives the session (this machine's job daemon, a
	// task's container, an ssh host). Required.
	Open func(t *testing.T) Session
	// Processes lists the command lines of the processes running where
	// the session's jobs run, one per line, seen from outside runbox.
	// Nil means [HostProcesses]: this machine's, which holds the
	// processes of local jobs and of the containers and fake sandboxes
	// the tests start here.
	Processes func(t *testing.T) string
	// ReleasedAtEnd, when not empty, says why the sandbox the session's
	// jobs run in goes away when the session ends (a session's own
	// container, pod or cloud sandbox): its detached and keep-awake jobs
	// have nowhere to run on, and the Lifetimes check asserts that they
	// end with it. Empty means the sandbox outlives the session, and the
	// check asserts that they run on.
	ReleasedAtEnd string
	// Parallel runs the checks side by side, each in its own session
	// (they mostly wait: for a yield, a quiet spell, a timeout). False
	// runs them one after the other, as a backend whose test sets the
	// process environment (t.Setenv) must.
	Parallel bool
	// Unsupported names the checks the backend cannot pass, each with
	// the reason, which the check is skipped with. Nil means none: every
	// check runs.
	Unsupported map[Check]string
}

// Check names one check of the suite; it is also its subtest's name.
type Check string

// The checks.
const (
	CheckOutput          Check = "Output"
	CheckYield           Check = "Yield"
	CheckLifetimes       Check = "Lifetimes"
	CheckWaitingForInput Check = "WaitingForInput"
	CheckQuiet           Check = "Quiet"
	CheckWatch           Check = "Watch"
	CheckNoOutputTimeout Check = "NoOutputTimeout"
	CheckTreeKill        Check = "TreeKill"
)

// hang bounds every wait of the suite: far above any honest duration
// (a loaded machine has taken over a minute for a docker session's first
// job), it only turns a hang into a failure.
const hang = 3 * time.Minute

// check is one check of the suite.
type check struct {
	name Check
	fn   func(t *testing.T, s *session)
}

// checks is the suite, in the order Run runs it.
var checks = []check{
	{CheckOutput, testOutput},
	{CheckYield, testYield},
	{CheckLifetimes, testLifetimes},
	{CheckWaitingForInput, testWaitingForInput},
	{CheckQuiet, testQuiet},
	{CheckWatch, testWatch},
	{CheckNoOutputTimeout, testNoOutputTimeout},
	{CheckTreeKill, testTreeKill},
}

// Run runs the suite against sessions made by b.Open, each check as a
// subtest with a session of its own.
func Run(t *testing.T, b Backend) {
	if b.Open == nil {
		t.Fatal("jobtest: Backend.Open is nil")
	}
	for name, why := range b.Unsupported {
		if !slices.ContainsFunc(checks, func(c check) bool { return c.name == name }) {
			t.Errorf("jobtest: Backend.Unsupported names %q, which is no check", name)
		}
		if why == "" {
			t.Errorf("jobtest: Backend.Unsupported[%s] gives no reason", name)
		}
	}
	for _, c := range checks {
		t.Run(string(c.name), func(t *testing.T) {
			if b.Parallel {
				t.Parallel()
			}
			if why, ok := b.Unsupported[c.name]; ok {
				t.Skipf("declared unsupported on this backend: %s", why)
			}
			c.fn(t, b.open(t))
		})
	}
}

// session is a [Session] under test: its events collected by the pump a
// front end would run, its end the one a front end makes.
type session struct {
	Session
	procs    func(t *testing.T) string
	released string
	n        *notices

	mu      sync.Mutex
	pumping bool
	ended   bool
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func (b Backend) open(t *testing.T) *session {
	t.Helper()
	s := b.Open(t)
	if s.Session == nil || s.Jobs == nil {
		t.Fatal("jobtest: Backend.Open returned a Session without its Session or Jobs")
	}
	procs := b.Processes
	if procs == nil {
		procs = HostProcesses
	}
	x := &session{Session: s, procs: procs, released: b.ReleasedAtEnd, n: newNotices()}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		if err := x.end(ctx); err != nil {
			t.Errorf("jobtest: ending the session: %v", err)
		}
	})
	return x
}

// pump starts delivering the session's job events to x.n, once. Like a
// front end, it starts only once the session has a job: the registry is
// not reached before the gate let a command through.
func (x *session) pump() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pumping || x.ended {
		return
	}
	x.pumping = true
	ctx, cancel := context.WithCancel(context.Background())
	x.stop = cancel
	x.wg.Go(func() { x.Jobs.Deliver(ctx, x.n.add, 50*time.Millisecond) })
}

// end ends the session as a front end does when its client goes away:
// the pump stopped, the session-lifetime jobs killed, then the session
// closed with its environment. Later calls do nothing.
func (x *session) end(ctx context.Context) error {
	x.mu.Lock()
	if x.ended {
		x.mu.Unlock()
		return nil
	}
	x.ended = true
	pumping, stop := x.pumping, x.stop
	x.mu.Unlock()
	if !pumping {
		// No job was started: there is nothing of the session's in a
		// registry to end.
		return x.Session.Session.Close(ctx)
	}
	stop()
	x.wg.Wait()
	var errs []error
	if _, err := x.Jobs.End(ctx); err != nil {
		errs = append(errs, fmt.Errorf("its jobs: %w", err))
	}
	if err := x.Session.Session.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing it: %w", err))
	}
	return errors.Join(errs...)
}

// start starts req as the session's job, failing the test if it cannot.
func (x *session) start(t *testing.T, req procregistry.StartRequest) procregistry.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	in, err := x.Jobs.Start(ctx, req)
	if err != nil {
		t.Fatalf("Start(%q): %v", req.Shell, err)
	}
	x.pump()
	if in.Status == procregistry.StatusFailed {
		t.Fatalf("Start(%q): the job failed to start: %s", req.Shell, in.Error)
	}
	return in
}

// wait waits for job id to finish and returns it.
func (x *session) wait(t *testing.T, id string) procregistry.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	in, done, err := x.Jobs.Wait(ctx, id, hang)
	if err != nil || !done {
		t.Fatalf("Wait(%s) = %+v, done %v, %v; want its end", id, in, done, err)
	}
	return in
}

// later starts a job with a completion notice and waits for that notice.
// A session's events are delivered in order, so every event of an
// earlier job that was to come has come by then, a second delivery of
// one included.
func (x *session) later(t *testing.T) {
	t.Helper()
	in := x.start(t, procregistry.StartRequest{Shell: "true", Notify: true})
	x.n.await(t, in.ID, procregistry.EventCompletion, 1)
}

// bounded is a context for the calls of one check, bounded by hang.
func bounded(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), hang)
	t.Cleanup(cancel)
	return c
}
