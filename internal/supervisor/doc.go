// Package supervisor is the program that supervises background jobs for
// package procregistry: `runbox __supervise ...` calls [Main]. The
// registry starts it by argv and never imports this package; the two
// share only the state and job directories, whose files, records, the
// host's request protocol and the control socket protocol are defined in
// internal/jobdir.
//
// # The first stage
//
// For each job the registry starts `__supervise JOBDIR` through a backend,
// so it runs with the child environment the backend built with package
// spawn, and in the job's working directory. This first stage resolves
// the job's command with that environment (its shell, its program on
// PATH; a command that cannot start is recorded in startfail.json here),
// then hands the job to the state directory's host over the host's socket
// (<state>/host/host.sock), sending the command, its own environment and
// its working directory with the request. It exits once the host answers
// that the job runs (pid.json is written) or that its failure is
// recorded. Where the host cannot hold the job (below), or none answers,
// it starts a supervisor of the job's own instead.
//
// # The host
//
// The host (`__supervise -host STATEDIR`, which the registry starts
// directly, detached, in a session of its own and with the registry's
// environment, never a job's) supervises every job of its state directory
// in one process, each job in goroutines of its own. An idle job thus
// costs a share of one process plus its wrapper, a /bin/sh of about a
// hundred KiB, instead of a Go process of its own (several MiB). For each
// job it:
//
//  1. makes the job's container with package launch (a systemd scope or a
//     cgroup; a job with limits does not run where they cannot be
//     applied);
//  2. starts the command under its wrapper, a small /bin/sh script held at
//     its launch.Barrier until it is in the container, which runs the command
//     in the foreground and writes its exit code to the exitcode file, so
//     the exit is on disk even if the host dies (wrapper.go). The wrapper
//     gets exactly the environment and the directory the first stage sent:
//     they are on no argv and in no environ but the job's own, and the
//     host keeps no reference to them once the wrapper runs;
//  3. sends output straight into the job's log (opened O_APPEND), or for a
//     PTY job through one `cat` that copies the terminal (ptycopy.go);
//  4. writes pid.json (its own identity, with Host set, the wrapper's, the
//     command's and the container's reference), serves the job's control
//     socket (stdin writes, EOF, resize, exit waits), reaps the wrapper
//     and writes exit.json.
//
// One goroutine reaps all the host's children, woken by SIGCHLD
// (hostreap.go): an idle job holds no thread. The host is the whole
// runbox binary, whose start touches far more of it than waiting for
// jobs needs: once it listens, and again a moment after each burst of job
// starts, it drops its read-only pages of the executable and returns its
// free heap to the system (trim_linux.go), so that an idle host holds a
// few MiB. SIGTERM to the host is
// forwarded to every job's command; the host stays to record how they
// end. Once it holds no job it lingers a moment for the next one (two
// seconds; ten for its first), then exits. A flock on <state>/host/host.lock keeps one host per state
// directory.
//
// The host is no job's parent but its wrapper's, and no job's subreaper:
// a tree is the job's container's. A wrapper killed alone leaves its
// command to init: the host then waits (on a pidfd) until the command has
// ended, and its exit.json says that the status is the wrapper's, the
// command's own being unknown. A SIGKILL of the host orphans every
// job it held and ends none of them; each runs on, writing its log, and
// its wrapper records its exit code; the registry adopts them all (see
// procregistry's orphan.go). Only what went through the host is lost: the
// jobs' stdin (they read EOF) and terminal resizes.
//
// # A supervisor of the job's own
//
// Without a container — no cgroup or scope can be made here, the command
// cannot be placed in one, or there is no /bin/sh to hold it — the host
// gives the job back, and the first stage supervises it as before the host
// existed, in two stages: it starts a detached copy of itself (a new
// session, stdio away from any terminal or pipe of the registry's), which
// makes itself the job's subreaper (PR_SET_CHILD_SUBREAPER: a child that
// double-forks and calls setsid is reparented to it, not to init, so a
// kill finds it among its descendants, and it reaps such orphans itself),
// then does steps 2 to 4 for this one job and exits with it. A subreaper
// is a property of a whole process, so the host cannot be one for each of
// its jobs: that is why these jobs keep a process each (and cost several
// MiB each). `__supervise -own JOBDIR` (procregistry.Options
// SupervisorPerJob) takes this shape for every job.
//
// Nothing in either shape depends on the registry staying alive.
//
// # What it does not do
//
// It never decides whether a command may run (the registry's caller went
// through the command gate before the job was created), never reads the
// registry's own state, and never kills a job's running tree: a kill is
// the registry's, through the container reference in pid.json. What it
// does kill is what a command left running once the command has ended
// (leftovers.go): a job ends whole, as a foreground command does. Its
// sockets (the host's, a job's control socket) serve only unconfined
// callers of its user (jobdir.CheckUnconfinedPeer): a sandboxed command
// that reached one could run a program, or write to a job's stdin,
// outside its sandbox.
package supervisor
