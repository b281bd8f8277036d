package supervisor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/launch"
	"github.com/runbox/runbox/procregistry/internal/jobdir"
	"github.com/runbox/runbox/termination"
)

// supervisor is the second stage's state.
type supervisor struct {
	dir    string
	cmd    *exec.Cmd      // the wrapper (or, without /bin/sh, the command itself)
	cmdPID int            // the command's PID as it reported it; 0 when unknown
	stdin  io.WriteCloser // pipe write end, or the PTY master
	ptmx   *os.File
	copier *exec.Cmd             // copies ptmx to the log (ptycopy.go); nil: this process does
	cont   termination.Container // nil: process group only
	warn   string                // why cont is nil

	mu     sync.Mutex
	closed bool // stdin closed
	exit   *jobdir.ExitRecord
	exited chan struct{}
	conns  sync.WaitGroup
}

// superviseDetached is the second stage. fd 3 is the report pipe to the
// first stage.
func superviseDetached(dir string) int {
	// The report pipe must not leak into the command: a command that
	// held it would keep the first stage (and the registry's Start)
	// waiting until it exits.
	syscall.CloseOnExec(3)
	report := os.NewFile(3, "report")
	say := func(s string) {
		if report != nil {
			fmt.Fprintln(report, s)
			report.Close()
			report = nil
		}
	}
	// Hangups and interrupts are caught (and dropped), not ignored: a
	// signal ignored here would stay ignored in the command, while a
	// caught one is reset to its default when the command execs. This
	// also undoes an ignore inherited from whoever started us.
	sink := make(chan os.Signal, 1)
	signal.Notify(sink, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	defer signal.Stop(sink)
	s := &supervisor{dir: dir, exited: make(chan struct{})}
	subreaper := becomeSubreaper() == nil
	if err := s.start(); err != nil {
		fr := jobdir.FailRecord{Error: err.Error(), Status: startStatus(err), Time: time.Now()}
		if werr := jobdir.WriteJSON(filepath.Join(dir, jobdir.FileStartFail), fr); werr != nil {
			say("supervisor: " + werr.Error())
			return 1
		}
		say("ok") // the failure is recorded; the registry reads it
		return 0
	}
	ln, err := s.listen()
	if err != nil {
		// Without a control socket the job still runs and its exit is
		// still recorded; only stdin writes and prompt waits are lost.
		fmt.Fprintln(os.Stderr, "supervisor:", err)
	}
	child := identify(s.cmd.Process.Pid)
	cmdProc := child
	pr := jobdir.PIDRecord{Supervisor: identify(os.Getpid()), Started: time.Now(), Warning: s.warn}
	if s.cmdPID != 0 && s.cmdPID != child.PID {
		cmdProc = identify(s.cmdPID)
		pr.Wrapper = child
	}
	pr.Command = cmdProc
	keep := []int{child.PID, cmdProc.PID}
	if s.copier != nil {
		pr.Copier = identify(s.copier.Process.Pid)
		keep = append(keep, pr.Copier.PID)
	}
	if s.cont != nil {
		ref := s.cont.Ref()
		pr.Container = &ref
	} else {
		pr.Subreaper = subreaper
	}
	if subreaper {
		// Orphans are reaped as they die (on SIGCHLD), except the wrapper,
		// which cmd.Wait reaps, and the command, which the wrapper reaps —
		// or, should the wrapper die first, which wait adopts.
		stopReaping := make(chan struct{})
		reaped := reapOrphans(keep, stopReaping)
		defer func() { close(stopReaping); <-reaped }()
	}
	if err := jobdir.WriteJSON(filepath.Join(dir, jobdir.FilePID), pr); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
	}
	say("ok")

	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	termDone := make(chan struct{})
	go func() {
		defer close(termDone)
		for range term {
			cmdProc.Signal(syscall.SIGTERM) // forwarded; we stay to record the exit
		}
	}()
	defer func() { signal.Stop(term); close(term); <-termDone }()
	if ln != nil {
		go s.serve(ln)
	}
	st := s.wait()
	if pr.Wrapper.PID != 0 && subreaper && killedBySignal(s.cmd.ProcessState) {
		// The wrapper itself was killed: the command, if it still runs,
		// is now our child (we are its subreaper); its status is ours to
		// take.
		st = adoptedStatus(cmdProc, st)
	}
	s.release(&st)
	if err := jobdir.RemoveCommand(dir); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
	}
	rec := &jobdir.ExitRecord{Status: st, Ended: time.Now()}
	if err := jobdir.WriteJSON(filepath.Join(dir, jobdir.FileExit), rec); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
	}
	s.mu.Lock()
	s.exit = rec
	close(s.exited)
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
		os.Remove(filepath.Join(dir, jobdir.FileCtl))
	}
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	t := time.NewTimer(2 * time.Second) // a stuck client does not keep us
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return 0
}

// identify is termination.Identify that keeps the PID of a process that
// is already gone (with no start time, it matches no living process).
func identify(pid int) termination.Proc {
	p, err := termination.Identify(pid)
	if err != nil {
		return termination.Proc{PID: pid}
	}
	return p
}

// killedBySignal reports whether the reaped process died of a signal
// (rather than exiting with a code, which may itself say "signal").
func killedBySignal(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// adoptedStatus waits for the command after its wrapper died under it
// (reparented to us, its subreaper) and returns its status; st, the
// wrapper's, when the command is not ours to wait for.
func adoptedStatus(cmd termination.Proc, st envs.ExitStatus) envs.ExitStatus {
	if !cmd.Alive() {
		return st
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(cmd.PID, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return st
		}
		break
	}
	if ws.Signaled() {
		return launch.WaitStatus(ws)
	}
	return launch.ShellStatus(ws.ExitStatus())
}

// startStatus maps a start failure to the exit code conventions.
func startStatus(err error) envs.ExitStatus {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return envs.ExitStatus{Code: envs.ExitNotFound}
	}
	return envs.ExitStatus{Code: envs.ExitCannotEnter}
}
