package supervisor

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/gitguard"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// supervisor supervises one job: the whole state of a per-job second
// stage (detached.go), or one of the jobs of a host (host.go).
type supervisor struct {
	dir string
	// env and cwd are the job's environment and working directory, as the
	// first stage received them from the backend; nil and "" mean this
	// process's own (a per-job supervisor was started with them).
	env []string
	cwd string
	// hosted: this job is one of a host's. The host never runs a job
	// uncontained (it cannot be one job's subreaper): startPrepared
	// answers a *noContainerError instead.
	hosted bool
	// reaper is the host's; nil: each child is waited for by a goroutine
	// of its own.
	reaper *reaper

	cmd       *exec.Cmd             // the wrapper (or, without /bin/sh, the command itself)
	cmdPID    int                   // the command's PID as it reported it; 0 when unknown
	cmdProc   termination.Proc      // the command, once it runs
	stdin     io.WriteCloser        // pipe write end, or the PTY master
	ptmx      *os.File              // the PTY master; nil for a pipe job
	copier    *exec.Cmd             // copies ptmx to the log (ptycopy.go); nil: this process does
	copierPID int                   // copier's PID, kept for a kill after it was handed to the reaper
	cont      termination.Container // nil: process group only
	warn      string                // why cont is nil
	subreaper bool                  // this process is the job's subreaper (a per-job supervisor)
	grace     time.Duration         // the leftovers' grace after SIGTERM (the spec's)
	denials   envs.ViolationSet     // what the job's sandbox refused it, as decided
	guard     string                // the workspace a confined job could write: checked for git leftovers while it runs and when it ends
	started   time.Time             // when the command was started

	mu     sync.Mutex
	closed bool // stdin closed
	exit   *jobdir.ExitRecord
	exited chan struct{}
	conns  sync.WaitGroup
}

func newSupervisor(dir string) *supervisor {
	return &supervisor{dir: dir, exited: make(chan struct{})}
}

// logf writes a message of this job to this process's stderr (the job's
// supervisor.log, or the host's log).
func (s *supervisor) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "supervisor: job %s: %s\n", filepath.Base(s.dir), fmt.Sprintf(format, args...))
}

// pidRecord is the job's pid.json once its command runs, and the PIDs of
// this process's children that are the job's own (which an orphan reaper
// must leave alone). It sets s.cmdProc.
func (s *supervisor) pidRecord() (jobdir.PIDRecord, []int) {
	child := identify(s.cmd.Process.Pid)
	cmdProc := child
	pr := jobdir.PIDRecord{Supervisor: identify(os.Getpid()), Started: time.Now(), Warning: s.warn}
	if s.cmdPID != 0 && s.cmdPID != child.PID {
		cmdProc = identify(s.cmdPID)
		pr.Wrapper = child
	}
	pr.Command = cmdProc
	s.cmdProc = cmdProc
	keep := []int{child.PID, cmdProc.PID}
	if s.copier != nil {
		pr.Copier = identify(s.copier.Process.Pid)
		keep = append(keep, pr.Copier.PID)
	}
	if s.cont != nil {
		ref := s.cont.Ref()
		pr.Container = &ref
	}
	pr.Host = s.hosted
	return pr, keep
}

// listenOrWarn opens the control socket. Without one the job still runs
// and its exit is still recorded; only stdin writes and prompt waits are
// lost.
func (s *supervisor) listenOrWarn() net.Listener {
	ln, err := s.listen()
	if err != nil {
		s.logf("%v", err)
		return nil
	}
	return ln
}

// run serves the job until its command has ended and its exit is on
// disk: the control socket, the wait for the wrapper, the container's
// release, exit.json. adopt says that this process is the job's
// subreaper, and so may take the command's own status when its wrapper
// was killed under it.
func (s *supervisor) run(ln net.Listener, adopt bool) {
	if ln != nil {
		go s.serve(ln)
	}
	stopGit := s.watchGit()
	st, w := s.wait()
	gitNotes := stopGit()
	var note string
	switch {
	case s.cmdPID == 0 || !killedBySignal(w):
	case adopt:
		// The wrapper itself was killed: the command, if it still runs,
		// is now our child (we are its subreaper); its status is ours to
		// take.
		st = adoptedStatus(s.cmdProc, st)
	default:
		// The wrapper was killed under the command, which is not ours to
		// wait for (init adopted it): if it runs on, the job has not
		// ended, but how it ends will not be known. One that ended at
		// about the same time (looked at after the wrapper was reaped,
		// it may already be gone) was reaped by init: its status is
		// unknown just the same.
		waitGone(s.cmdProc)
		note = noteWrapperKilled
	}
	st.LeftoverKilled = s.clearLeftovers()
	note = joinNote(note, joinNotes(append(gitNotes, s.guardGit())))
	s.release(&st)
	if err := jobdir.RemoveCommand(s.dir); err != nil {
		s.logf("%v", err)
	}
	rec := &jobdir.ExitRecord{Status: st, Ended: time.Now(), Note: note, Violations: s.denials.List()}
	if err := jobdir.WriteJSON(filepath.Join(s.dir, jobdir.FileExit), rec); err != nil {
		s.logf("%v", err)
	}
	s.mu.Lock()
	s.exit = rec
	close(s.exited)
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
		os.Remove(filepath.Join(s.dir, jobdir.FileCtl))
	}
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	t := time.NewTimer(2 * time.Second) // a stuck client does not keep us
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// guardGit makes inert what the job left in its workspace for the user's
// git to run (internal/gitguard), once nothing of it runs: the findings
// join the job's decided violations, and what they say is returned for
// the exit's note.
func (s *supervisor) guardGit() string {
	if s.guard == "" {
		return ""
	}
	rep, err := gitguard.Check(context.Background(), s.guard, gitguard.Options{Since: s.started})
	for _, v := range rep.Violations() {
		s.denials.Add(v)
	}
	return strings.Join(rep.Warnings(err), "; ")
}

// joinNote joins two notes of an exit.
func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// noteWrapperKilled is the note of an exit whose status is the wrapper's.
const noteWrapperKilled = "the job's wrapper was killed before its command ended; the status is the wrapper's, the command's own is unknown"

// recordStartFail writes startfail.json for a command that could not
// start.
func recordStartFail(dir string, err error) error {
	fr := jobdir.FailRecord{Error: err.Error(), Status: startStatus(err), Time: time.Now()}
	return jobdir.WriteJSON(filepath.Join(dir, jobdir.FileStartFail), fr)
}

// waited is how a child ended; ok is false when it could not be reaped.
type waited struct {
	ws syscall.WaitStatus
	ok bool
}

// waitCmd returns a channel that yields c's end. A host hands c to its
// reaper (one goroutine for every job's children, woken by SIGCHLD, so an
// idle job holds no thread blocked in wait4); a per-job supervisor waits
// in a goroutine of its own.
func (s *supervisor) waitCmd(c *exec.Cmd) <-chan waited {
	if s.reaper != nil {
		pid := c.Process.Pid
		// The reaper waits for the PID itself; until then the child stays
		// a zombie, so the PID cannot name another process.
		c.Process.Release()
		return s.reaper.watch(pid)
	}
	ch := make(chan waited, 1)
	go func() {
		c.Wait()
		var w waited
		if c.ProcessState != nil {
			w.ws, w.ok = c.ProcessState.Sys().(syscall.WaitStatus)
		}
		ch <- w
	}()
	return ch
}

// waitStatus is the status of the wrapper (or of an unwrapped command)
// as its parent reaped it. The wrapper's own code is the one its shell
// reported for the command, so 128+n is read as signal n.
func waitStatus(w waited) envs.ExitStatus {
	if !w.ok {
		return envs.ExitStatus{Code: 1} // not reaped: nothing is known of how it ended
	}
	if w.ws.Signaled() {
		return launch.WaitStatus(w.ws)
	}
	return launch.ShellStatus(w.ws.ExitStatus())
}

// killedBySignal reports whether the reaped process died of a signal
// (rather than exiting with a code, which may itself say "signal").
func killedBySignal(w waited) bool { return w.ok && w.ws.Signaled() }
