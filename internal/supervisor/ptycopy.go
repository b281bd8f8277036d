package supervisor

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/statedir"
)

// A PTY job's output has to be read from the terminal's master side and
// written to the log by some process. If that were the supervisor, its
// death would close the master, and the job would get SIGHUP and die with
// it. So the copy is done by a `cat` of its own: it holds a copy of the
// master, so the terminal outlives the supervisor, and it writes to the
// log opened O_APPEND, so the output goes on reaching the disk; it ends
// by itself (EIO) once every process on the terminal has closed it.
// It is in a process group of its own and in no container: signals to
// the job's group do not reach it, and it is never among the processes
// a kill counts. Where there is no cat, the supervisor copies itself.

// startCopier starts the copier of s.ptmx into the log. It returns nil
// (and the supervisor copies in-process) when none can be started.
func (s *supervisor) startCopier() *exec.Cmd {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return nil
	}
	logf, err := statedir.OpenFile(filepath.Join(s.dir, jobdir.FileLog), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	defer logf.Close() // the copier has its own
	c := exec.Command(cat)
	// The master goes to cat as its stdin. (Handing it over makes the
	// master blocking for this process too, which only ever writes to it
	// and sets its size.) Its complaint about EIO at the end goes to
	// /dev/null.
	c.Stdin, c.Stdout = s.ptmx, logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return nil
	}
	return c
}

// copyInProcess copies the terminal to the log in this process, until
// the master reads EIO or is closed; done is closed at the end.
func (s *supervisor) copyInProcess(done chan<- struct{}) {
	defer close(done)
	logf, err := statedir.OpenFile(filepath.Join(s.dir, jobdir.FileLog), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer logf.Close()
	io.Copy(logf, s.ptmx) // ends with EIO once every slave fd is closed
}

// lingerCopier gives the copy up to jobdir.CopierLinger to drain after
// the command's end, then stops it; it returns once the copier (pid,
// whose end done yields) is gone.
func lingerCopier(pid int, done <-chan waited) {
	t := time.NewTimer(jobdir.CopierLinger)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	// Not reaped yet, so the PID is still the copier's.
	syscall.Kill(pid, syscall.SIGKILL)
	<-done
}
