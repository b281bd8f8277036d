package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// superviseDetached is the second stage of a per-job supervisor: a
// process of this job's own, which supervises it to its end. fd 3 is the
// report pipe to the first stage.
func superviseDetached(dir string) int {
	// The report pipe must not leak into the command: a command that
	// held it would keep the first stage (and the registry's Start)
	// waiting until it exits.
	syscall.CloseOnExec(3)
	say := reporter(os.NewFile(3, "report"))
	// Hangups and interrupts are caught (and dropped), not ignored: a
	// signal ignored here would stay ignored in the command, while a
	// caught one is reset to its default when the command execs. This
	// also undoes an ignore inherited from whoever started us.
	stopSink := sinkSignals()
	defer stopSink()
	s := newSupervisor(dir)
	subreaper := becomeSubreaper() == nil
	s.subreaper = subreaper
	if err := s.start(); err != nil {
		if werr := recordStartFail(dir, err); werr != nil {
			say("supervisor: " + werr.Error())
			return 1
		}
		say("ok") // the failure is recorded; the registry reads it
		return 0
	}
	ln := s.listenOrWarn()
	pr, keep := s.pidRecord()
	if s.cont == nil {
		pr.Subreaper = subreaper
	}
	if subreaper {
		// Orphans are reaped as they die (on SIGCHLD), except the wrapper,
		// which s.wait reaps, and the command, which the wrapper reaps —
		// or, should the wrapper die first, which run adopts.
		stopReaping := make(chan struct{})
		reaped := reapOrphans(keep, stopReaping)
		defer func() { close(stopReaping); <-reaped }()
	}
	if err := jobdir.WriteJSON(filepath.Join(dir, jobdir.FilePID), pr); err != nil {
		s.logf("%v", err)
	}
	say("ok")

	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	termDone := make(chan struct{})
	go func() {
		defer close(termDone)
		for range term {
			s.cmdProc.Signal(syscall.SIGTERM) // forwarded; we stay to record the exit
		}
	}()
	defer func() { signal.Stop(term); close(term); <-termDone }()
	s.run(ln, pr.Wrapper.PID != 0 && subreaper)
	return 0
}

// sinkSignals catches hangups, interrupts and SIGPIPE and drops them
// (see superviseDetached); the returned function stops it.
func sinkSignals() func() {
	sink := make(chan os.Signal, 1)
	signal.Notify(sink, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE)
	return func() { signal.Stop(sink) }
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
