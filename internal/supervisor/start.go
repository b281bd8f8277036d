package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/statedir"
	"github.com/runbox/runbox/termination"
)

// containerSetup bounds making the job's container (a D-Bus round trip
// for a systemd scope).
const containerSetup = 30 * time.Second

// prepare reads the job's spec from dir and resolves its command (the
// shell, the program on PATH) with this process's environment, which is
// the job's: the first stage does it before it hands the job to a host,
// and a per-job second stage does it again.
func prepare(dir string) (spec jobdir.Spec, path string, argv []string, err error) {
	ok, err := jobdir.ReadJSON(filepath.Join(dir, jobdir.FileJob), &spec)
	if err != nil {
		return spec, "", nil, err
	}
	if !ok {
		return spec, "", nil, fmt.Errorf("supervisor: no %s in %s", jobdir.FileJob, dir)
	}
	argv = spec.Args
	if spec.Shell != "" || spec.Display != "" {
		sh, err := launch.Shell("")
		if err != nil {
			return spec, "", nil, fmt.Errorf("supervisor: %w", err)
		}
		if argv, err = shellArgv(sh, dir, spec); err != nil {
			return spec, "", nil, err
		}
	}
	if len(argv) == 0 {
		return spec, "", nil, fmt.Errorf("supervisor: %w: empty command", envs.ErrBadCommand)
	}
	path, err = exec.LookPath(argv[0])
	if err != nil {
		return spec, "", nil, err
	}
	if path, argv, err = confined(dir, spec, path, argv); err != nil {
		return spec, "", nil, err
	}
	return spec, path, argv, nil
}

// confined wraps the job's program in its sandbox's trampoline, when it
// has one. The job's state directory is unreachable from inside (another
// job's log must be), but its own command file (a redacted job's shell
// sources it) and its own log (a command may reopen /dev/stdout) are
// made reachable to it.
func confined(dir string, spec jobdir.Spec, path string, argv []string) (string, []string, error) {
	if spec.Confine == nil || spec.Confine.Profile == confine.ProfileOff {
		return path, argv, nil
	}
	p := *spec.Confine
	// Its own TMPDIR, in the job's directory: removed with the job's
	// record, and writable though the directory around it is not. This
	// process is the job's alone (a first or second stage), so its
	// environment is the job's.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, fmt.Errorf("supervisor: job %s: TMPDIR: %w", spec.ID, err)
	}
	os.Setenv("TMPDIR", tmp)
	p.Writable = append(slices.Clone(p.Writable), tmp, filepath.Join(dir, jobdir.FileLog))
	if spec.Display != "" {
		p.Writable = append(p.Writable, filepath.Join(dir, jobdir.FileCommand))
	}
	wrapped, err := confine.Argv(spec.Confiner, p, path, argv)
	if err != nil {
		return "", nil, fmt.Errorf("supervisor: job %s: %w", spec.ID, err)
	}
	return wrapped[0], wrapped, nil
}

// handover makes the handover of a job confined under a network
// allowlist (nil for any other) and names it in cmd's environment: this
// process serves the sandbox's listener, so that the job reaches the
// loopback servers it starts itself (see confine.Handover).
func handover(spec jobdir.Spec, cmd *exec.Cmd) (*confine.Handover, error) {
	if spec.Confine == nil {
		return nil, nil
	}
	h, err := confine.NewHandover(*spec.Confine)
	if err != nil || h == nil {
		return nil, err
	}
	h.Name(cmd)
	return h, nil
}

// start launches the job's command, in a container of its own when one
// can be made (see the package documentation, "Containment").
func (s *supervisor) start() error {
	spec, path, argv, err := prepare(s.dir)
	if err != nil {
		return err
	}
	return s.startPrepared(spec, path, argv)
}

// noContainerError is a hosted job's start that would have run
// uncontained: the host gives such a job back, and its first stage
// supervises it in a process of its own (which can be its subreaper).
type noContainerError struct{ why string }

func (e *noContainerError) Error() string { return "supervisor: " + e.why }

// startPrepared is start with the command resolved.
func (s *supervisor) startPrepared(spec jobdir.Spec, path string, argv []string) error {
	s.grace = max(spec.Grace, 0)
	if c := spec.Confine; c != nil && c.Profile == confine.ProfileWorkspace {
		s.guard = c.Workspace
	}
	s.started = time.Now()
	var limits envs.Limits
	if spec.Limits != nil {
		limits = *spec.Limits
	}
	if !hasWrapperShell() {
		// The gate is the wrapper: without a shell to hold the command
		// there is neither a container nor a recorded exit without us.
		why := "no " + wrapperShell + ": the job runs in its process group only, and its exit is known only to its supervisor"
		if !limits.IsZero() {
			return fmt.Errorf("supervisor: limits requested but %s", why)
		}
		if s.hosted {
			return &noContainerError{why}
		}
		s.warn = why
		return s.launch(spec, path, argv, nil)
	}
	cont, err := newJobContainer(spec.ID, limits)
	switch {
	case err != nil && !limits.IsZero():
		return fmt.Errorf("supervisor: limits requested but no container: %w", err)
	case err != nil && s.hosted:
		return &noContainerError{err.Error()}
	case err != nil:
		s.warn = "no container, the job is held by its process group only: " + err.Error()
		s.logf("%s", s.warn)
	}
	err = s.launch(spec, path, argv, cont)
	if errors.Is(err, launch.ErrNotContained) {
		cont.Remove(context.Background())
		if !limits.IsZero() {
			return err
		}
		if s.hosted {
			return &noContainerError{err.Error()}
		}
		s.warn = "no container, the job is held by its process group only: " + err.Error()
		s.logf("%s", s.warn)
		cont = nil
		err = s.launch(spec, path, argv, nil)
	}
	if err != nil {
		if cont != nil {
			cont.Remove(context.Background())
		}
		return err
	}
	s.cont = cont
	return nil
}

// newJobContainer makes the container of job id. A container that would
// be the process group alone is no container: it returns an error saying
// why nothing stronger was usable.
func newJobContainer(id string, limits envs.Limits) (termination.Container, error) {
	ctx, cancel := context.WithTimeout(context.Background(), containerSetup)
	defer cancel()
	d := termination.Detect(ctx)
	if d.Mechanism == termination.ProcessGroup {
		return nil, fmt.Errorf("no container mechanism usable here: %s", d)
	}
	c, err := launch.NewContainer(ctx, "job-"+id, limits, termination.WithDetection(d))
	if err != nil {
		return nil, err
	}
	if c.Mechanism() == termination.ProcessGroup {
		c.Remove(ctx)
		return nil, fmt.Errorf("every container mechanism failed: %s", d)
	}
	return c, nil
}

// launch starts the command under its wrapper (see wrapper.go), held at
// the wrapper's gate. With a container it adds the wrapper to it and only
// then opens the gate, so everything the command forks is born inside;
// if the Add fails it shuts the gate, so the held wrapper exits having
// run nothing, and returns an error matching launch.ErrNotContained. Then it reads the PID the command reports.
// Without /bin/sh it starts the command directly.
func (s *supervisor) launch(spec jobdir.Spec, path string, argv []string, cont termination.Container) error {
	logf, err := statedir.OpenFile(filepath.Join(s.dir, jobdir.FileLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	var gate *launch.Barrier
	var repR, repW *os.File
	wrapped := hasWrapperShell()
	if wrapped {
		if gate, err = launch.NewBarrier(); err != nil {
			return err
		}
		defer gate.Close()
		if repR, repW, err = os.Pipe(); err != nil {
			return err
		}
		defer repR.Close()
		defer repW.Close()
		wargv := wrapperArgv(s.dir, path, argv)
		cmd = exec.Command(wargv[0], wargv[1:]...)
		cmd.ExtraFiles = []*os.File{gate.File(), repW}
	}
	// A per-job supervisor leaves cmd.Env nil and cmd.Dir empty: the
	// command inherits this process's environment and directory, which
	// are the ones the backend gave the first stage. A host sets the ones
	// the first stage sent it.
	cmd.Env, cmd.Dir = s.env, s.cwd
	h, err := handover(spec, cmd)
	if err != nil {
		return err
	}
	defer func() {
		if h != nil { // not started
			h.Close()
		}
	}()
	s.cmd = cmd
	if spec.PTY != nil {
		ptmx, err := launch.StartPTY(cmd, spec.PTY)
		if err != nil {
			return err
		}
		s.ptmx, s.stdin = ptmx, ptmx
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r, logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			r.Close()
			w.Close()
			return err
		}
		r.Close()
		s.stdin = w
	}
	if h != nil {
		h.Serve(cmd.Process.Pid, func(v confine.Violation) {
			s.denials.Add(envs.Violation{Op: v.Op, Target: v.Target, Rule: v.Rule, Source: envs.SourceDecided})
		})
		h = nil
	}
	if !wrapped {
		s.cmdPID = cmd.Process.Pid
		if s.ptmx != nil {
			s.copier = s.startCopier()
		}
		return nil
	}
	gate.Started()
	repW.Close()
	if cont != nil {
		ctx, cancel := context.WithTimeout(context.Background(), containerSetup)
		err := launch.Place(ctx, cont, cmd.Process.Pid)
		cancel()
		if err != nil {
			// Its gate shut, the wrapper exits having run nothing.
			gate.Close()
			cmd.Wait()
			s.stdin.Close()
			s.cmd, s.stdin, s.ptmx = nil, nil, nil
			return err
		}
	}
	if s.ptmx != nil {
		s.copier = s.startCopier()
	}
	if err := gate.Open(); err != nil {
		return fmt.Errorf("supervisor: release the command: %w", err)
	}
	s.cmdPID = readReportedPID(repR)
	return nil
}

// release settles the job's container once the command has been reaped:
// a limit that killed something is named in st, and an empty container
// is removed. A container that still holds processes (background
// children the command left behind) stays, recorded in pid.json, for a
// later kill or for retention to tear down.
func (s *supervisor) release(st *envs.ExitStatus) {
	if s.cont == nil {
		return
	}
	*st = launch.LimitKilled(*st, s.cont)
	if empty, err := s.cont.Empty(); err != nil || !empty {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerSetup)
	defer cancel()
	if err := s.cont.Remove(ctx); err != nil {
		s.logf("%v", err)
	}
}

// wait reaps the wrapper and returns the command's status, with how the
// wrapper itself ended. For a PTY job it then lets the copy of the
// terminal drain (jobdir.CopierLinger at most: a background child may
// keep the terminal open) before it closes the master.
func (s *supervisor) wait() (envs.ExitStatus, waited) {
	var copied chan struct{}
	if s.ptmx != nil && s.copier == nil {
		copied = make(chan struct{})
		go s.copyInProcess(copied)
	}
	var copierDone <-chan waited
	if s.copier != nil {
		s.copierPID = s.copier.Process.Pid
		copierDone = s.waitCmd(s.copier)
	}
	w := <-s.waitCmd(s.cmd)
	if copierDone != nil {
		lingerCopier(s.copierPID, copierDone)
	}
	if copied != nil {
		t := time.NewTimer(jobdir.CopierLinger)
		select {
		case <-copied:
		case <-t.C:
		}
		t.Stop()
	}
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.stdin.Close()
	}
	s.mu.Unlock()
	if copied != nil {
		<-copied
	}
	return waitStatus(w), w
}
