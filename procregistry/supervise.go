package procregistry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/launch"
	"github.com/runbox/runbox/termination"
)

// stage2Flag marks the detached second stage of the supervisor.
const stage2Flag = "-detached"

// Supervise is the main function of a job's supervisor: the program that
// [Options].Supervisor names runs it with the arguments that follow its
// own (for runbox: `runbox __supervise DIR`). It returns the process's
// exit status.
//
// It runs in two stages. The first is started by the registry through the
// [Environment], so it gets the child environment the backend built (with
// package spawn) and the job's working directory. It starts the second
// stage detached (a new session, stdio away from any terminal or pipe of
// the registry's), waits until that one reports that the command runs or
// could not start, and exits. The second stage is the supervisor proper:
// it starts the command with its output going straight into the job's
// log, records the command's identity, serves the control socket (stdin
// writes and exit waits), reaps the command and writes its exit status.
// Nothing in it depends on the registry staying alive.
func Supervise(args []string) int {
	if len(args) == 2 && args[0] == stage2Flag {
		return superviseDetached(args[1])
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "procregistry: usage: __supervise JOBDIR")
		return 2
	}
	return superviseLaunch(args[0])
}

// superviseLaunch is the first stage.
func superviseLaunch(dir string) int {
	fail := func(err error) int {
		fmt.Printf("procregistry: supervisor: %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	// The argv that ran this stage, minus its last argument (the dir).
	argv := append(append([]string{}, os.Args[:len(os.Args)-1]...), stage2Flag, dir)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	defer devnull.Close()
	supLog, err := OpenPrivateFile(filepath.Join(dir, fileSupLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	defer supLog.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	// Env nil: the second stage inherits this process's environment,
	// which is the child environment the backend built with spawn.
	p, err := os.StartProcess(self, argv, &os.ProcAttr{
		Files: []*os.File{devnull, devnull, supLog, w},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	w.Close()
	if err != nil {
		r.Close()
		return fail(err)
	}
	p.Release()
	msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	r.Close()
	if s := strings.TrimSpace(string(msg)); s != "ok" {
		if s == "" {
			s = "detached supervisor exited before reporting"
		}
		fmt.Println(s)
		return 1
	}
	return 0
}

// ctlRequest is one request on a supervisor's control socket.
type ctlRequest struct {
	Op   string `json:"op"` // "write", "close", "wait", "resize"
	Data []byte `json:"data,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
}

// ctlResponse answers a ctlRequest.
type ctlResponse struct {
	OK    bool        `json:"ok,omitempty"`
	Error string      `json:"error,omitempty"`
	Exit  *exitRecord `json:"exit,omitempty"`
}

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
	exit   *exitRecord
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
		fr := failRecord{Error: err.Error(), Status: startStatus(err), Time: time.Now()}
		if werr := writeJSON(filepath.Join(dir, fileStartFail), fr); werr != nil {
			say("procregistry: supervisor: " + werr.Error())
			return 1
		}
		say("ok") // the failure is recorded; the registry reads it
		return 0
	}
	ln, err := s.listen()
	if err != nil {
		// Without a control socket the job still runs and its exit is
		// still recorded; only stdin writes and prompt waits are lost.
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", err)
	}
	child := identify(s.cmd.Process.Pid)
	cmdProc := child
	pr := pidRecord{Supervisor: identify(os.Getpid()), Started: time.Now(), Warning: s.warn}
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
	if err := writeJSON(filepath.Join(dir, filePID), pr); err != nil {
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", err)
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
	if err := removeCommand(dir); err != nil {
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", err)
	}
	rec := &exitRecord{Status: st, Ended: time.Now()}
	if err := writeJSON(filepath.Join(dir, fileExit), rec); err != nil {
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", err)
	}
	s.mu.Lock()
	s.exit = rec
	close(s.exited)
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
		os.Remove(filepath.Join(dir, fileCtl))
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

// containerSetup bounds making the job's container (a D-Bus round trip
// for a systemd scope).
const containerSetup = 30 * time.Second

// start launches the job's command, in a container of its own when one
// can be made (see the package documentation, "Containment").
func (s *supervisor) start() error {
	var rec record
	ok, err := readJSON(filepath.Join(s.dir, fileJob), &rec)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("procregistry: no %s in %s", fileJob, s.dir)
	}
	argv := rec.Args
	if rec.Shell != "" || rec.Display != "" {
		sh, err := launch.Shell("")
		if err != nil {
			return fmt.Errorf("procregistry: %w", err)
		}
		if argv, err = shellArgv(sh, s.dir, rec); err != nil {
			return err
		}
	}
	if len(argv) == 0 {
		return fmt.Errorf("procregistry: %w: empty command", envs.ErrBadCommand)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	var limits envs.Limits
	if rec.Limits != nil {
		limits = *rec.Limits
	}
	if !hasWrapperShell() {
		// The gate is the wrapper: without a shell to hold the command
		// there is neither a container nor a recorded exit without us.
		why := "no " + wrapperShell + ": the job runs in its process group only, and its exit is known only to its supervisor"
		if !limits.IsZero() {
			return fmt.Errorf("procregistry: limits requested but %s", why)
		}
		s.warn = why
		return s.launch(rec, path, argv, nil)
	}
	cont, err := newJobContainer(rec.ID, limits)
	switch {
	case err != nil && !limits.IsZero():
		return fmt.Errorf("procregistry: limits requested but no container: %w", err)
	case err != nil:
		s.warn = "no container, the job is held by its process group only: " + err.Error()
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", s.warn)
	}
	err = s.launch(rec, path, argv, cont)
	if errors.Is(err, launch.ErrNotContained) {
		cont.Remove(context.Background())
		if !limits.IsZero() {
			return err
		}
		s.warn = "no container, the job is held by its process group only: " + err.Error()
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", s.warn)
		cont = nil
		err = s.launch(rec, path, argv, nil)
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
func (s *supervisor) launch(rec record, path string, argv []string, cont termination.Container) error {
	logf, err := OpenPrivateFile(filepath.Join(s.dir, fileLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	var gate *launch.Gate
	var repR, repW *os.File
	wrapped := hasWrapperShell()
	if wrapped {
		if gate, err = launch.NewGate(); err != nil {
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
	// cmd.Env stays nil: the command inherits this process's environment,
	// which is the one the backend built with package spawn.
	s.cmd = cmd
	if rec.PTY != nil {
		ptmx, err := launch.StartPTY(cmd, rec.PTY)
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
		if err := launch.Place(cont, cmd.Process.Pid); err != nil {
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
		return fmt.Errorf("procregistry: release the command: %w", err)
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
		fmt.Fprintln(os.Stderr, "procregistry: supervisor:", err)
	}
}


// wait reaps the wrapper and returns the command's status. For a PTY
// job it then lets the copy of the terminal drain (copierLinger at most:
// a background child may keep the terminal open) before it closes the
// master.
func (s *supervisor) wait() envs.ExitStatus {
	var copied chan struct{}
	if s.ptmx != nil && s.copier == nil {
		copied = make(chan struct{})
		go s.copyInProcess(copied)
	}
	err := s.cmd.Wait()
	if s.copier != nil {
		waitCopier(s.copier)
	}
	if copied != nil {
		t := time.NewTimer(copierLinger)
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
	return waitStatus(s.cmd.ProcessState, err)
}

// listen opens the control socket. The job directory is private (0700),
// so only its owner can reach the socket.
func (s *supervisor) listen() (net.Listener, error) {
	path := filepath.Join(s.dir, fileCtl)
	os.Remove(path)
	return net.Listen("unix", path)
}

func (s *supervisor) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer c.Close()
			s.handle(c)
		}()
	}
}

func (s *supervisor) handle(c net.Conn) {
	var req ctlRequest
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		return
	}
	resp := ctlResponse{OK: true}
	switch req.Op {
	case "wait":
		<-s.exited
		s.mu.Lock()
		resp.Exit = s.exit
		s.mu.Unlock()
	case "write", "close":
		s.mu.Lock()
		switch {
		case s.closed:
			resp = ctlResponse{Error: "stdin is closed"}
		case req.Op == "write":
			s.mu.Unlock() // a blocked pipe must not block close or wait
			_, err := s.stdin.Write(req.Data)
			s.mu.Lock()
			if err != nil {
				resp = ctlResponse{Error: err.Error()}
			}
		case s.ptmx != nil:
			// A terminal has no EOF of its own: send the EOF character
			// (^D), which ends input for a reader in canonical mode.
			if _, err := s.ptmx.Write([]byte{4}); err != nil {
				resp = ctlResponse{Error: err.Error()}
			}
		default:
			s.closed = true
			if err := s.stdin.Close(); err != nil {
				resp = ctlResponse{Error: err.Error()}
			}
		}
		s.mu.Unlock()
	case "resize":
		if s.ptmx == nil {
			resp = ctlResponse{Error: "not a terminal"}
			break
		}
		if err := pty.Setsize(s.ptmx, &pty.Winsize{Rows: req.Rows, Cols: req.Cols}); err != nil {
			resp = ctlResponse{Error: err.Error()}
		}
	default:
		resp = ctlResponse{Error: "unknown op " + req.Op}
	}
	json.NewEncoder(c).Encode(resp)
}

// ctlCall sends one request to the supervisor of the job in dir and
// reads its answer. ctx bounds the whole exchange.
func ctlCall(ctx context.Context, dir string, req ctlRequest) (ctlResponse, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(dir, fileCtl))
	if err != nil {
		return ctlResponse{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return ctlResponse{}, err
	}
	var resp ctlResponse
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return resp, err
	}
	return resp, nil
}
