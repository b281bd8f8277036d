// Package jobtest is the job-level conformance suite every runbox backend
// passes: the sibling of package envtest, one level up. envtest checks
// what a backend's environment does with one command; jobtest checks what
// a session on that backend promises for its background jobs, through
// the public API a front end uses ([service.OwnedJobs]): durable output,
// exactly-once completion notices, commands that yield, lifetime classes,
// the silence notices, watch patterns and whole-tree kill.
//
// A backend's test calls [Run] with a [Backend]: a way to open a fresh
// session on it with its jobs (the local job daemon's for local, the
// daemon in the session's own container, host, pod or sandbox for the
// others), a way to list the processes running where those jobs run, and
// what the backend declares about itself:
//
//	func TestJobs_Local(t *testing.T) {
//		jobtest.Run(t, jobtest.Backend{
//			Open: func(t *testing.T) jobtest.Session {
//				ss, jobs := openLocalSession(t) // the test's own fixture
//				return jobtest.Session{Session: ss, Jobs: jobs}
//			},
//			Processes: jobtest.HostProcesses,
//		})
//	}
//
// Each check is a subtest with a session of its own ([Check] names
// them). The suite ends a session as a front end does when its client
// goes away: the session-lifetime jobs killed ([service.OwnedJobs.End]),
// then the session closed with its environment.
//
// # What it asserts
//
//   - Output: a job's output is read back from any byte offset, in
//     pieces, while it runs and after it ended; its completion notice
//     comes exactly once, with its exit code and the output's tail.
//   - Yield: a command still running when its yield passes comes back
//     with a job id and its output so far, and later with exactly one
//     completion notice carrying the rest; one that ends in time comes
//     back with its output and exit code, and no notice follows.
//   - Lifetimes: at the session's end a session job is killed; a detached
//     or keep-awake job, or one made detached while it ran, outlives the
//     session where the session's sandbox does, and ends with it where
//     the sandbox is released then ([Backend].ReleasedAtEnd). List shows
//     each job's class, and SetLifetime changes it while the job runs.
//   - WaitingForInput: a job blocked in `read` is reported once, with the
//     output's tail; a line written to it lets it finish.
//   - Quiet: one quiet notice per silent spell, never a second one in the
//     same spell.
//   - Watch: a line matching a watch pattern is reported, before the
//     job's completion.
//   - NoOutputTimeout: a silent job is ended with a reason of its own,
//     apart from a kill the agent asked for.
//   - TreeKill: a kill ends the job's whole tree, a child that called
//     setsid included.
//
// # What it does not do
//
// It never skips a check because something failed: a check the backend
// cannot pass is named in [Backend].Unsupported with the reason, and is
// then skipped with that reason in the test output, so a gap is visible
// and never a silent pass. It does not look at processes through runbox
// to decide whether one runs (that would trust what it is testing): it
// asks [Backend].Processes, which sees the sandbox from outside. It does
// not test the MCP front end's encoding of these events (package server's
// tests do) nor a job daemon's crash recovery (package procregistry's).
//
// The suite needs a POSIX shell with sleep, read and setsid where the
// jobs run, and a gate that lets plain commands through without asking
// (the default policy does).
package jobtest
