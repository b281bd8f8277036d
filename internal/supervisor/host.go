package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/statedir"
)

// hostLinger is how long a host with no job waits for a new one before
// it exits. A host is cheap to start again (one exec), so it need not
// stay long; the wait only spares a restart between jobs started one
// after the other.
const hostLinger = 2 * time.Second

// trimDelay is how long after the last job start the host gives back
// the memory that starting jobs touched (trimStartup): long enough that a
// burst of starts trims once.
const trimDelay = 500 * time.Millisecond

// hostFirstWait is how long a new host waits for its first job: the
// registry starts the host just before the job's first stage, which the
// backend may be slow to run.
const hostFirstWait = 10 * time.Second

// host supervises the jobs of one state directory in one process, each
// in goroutines of its own (see the package documentation, "The host").
type host struct {
	state  string
	reaper *reaper

	mu      sync.Mutex
	active  int // requests being handled and jobs not yet ended
	closing bool
	ln      net.Listener
	idle    *time.Timer
	trim    *time.Timer              // trims (trimStartup) a moment after the last start
	jobs    map[*supervisor]struct{} // running jobs, for SIGTERM
	wg      sync.WaitGroup           // every request's and job's goroutine
}

// hostLaunch is `-host STATE`: it starts the host of the state directory
// detached (a new session, stdio away from the registry) and returns once
// it listens, or once it found another host already running: 0 then, 1
// (its message on stdout) when no host could be started.
func hostLaunch(state string) int {
	fail := func(err error) int {
		fmt.Printf("supervisor host: %v\n", err)
		return 1
	}
	hdir := filepath.Join(state, jobdir.HostDir)
	if err := statedir.CheckClosedDir(hdir); err != nil {
		return fail(err)
	}
	argv := append(append([]string{}, os.Args[:len(os.Args)-2]...), hostFlag+"-detached", state)
	// The host gets this process's environment, the registry's own (never
	// a job's: a job's environment reaches the host only in its request,
	// and only that job's wrapper gets it).
	msg, err := startDetached(argv, filepath.Join(hdir, jobdir.HostLog))
	if err != nil {
		return fail(err)
	}
	switch msg {
	case "ok", "busy": // busy: another host serves the directory
		return 0
	case "":
		return fail(errors.New("exited before reporting"))
	default:
		fmt.Println(msg)
		return 1
	}
}

// hostMain is the host itself. fd 3 is the report pipe to hostLaunch.
func hostMain(state string) int {
	syscall.CloseOnExec(3)
	say := reporter(os.NewFile(3, "report"))
	fail := func(err error) int {
		say("supervisor host: " + err.Error())
		return 1
	}
	defer sinkSignals()()
	hdir := filepath.Join(state, jobdir.HostDir)
	if err := statedir.CheckClosedDir(hdir); err != nil {
		return fail(err)
	}
	lock, err := holdUntilExit(filepath.Join(hdir, jobdir.HostLock))
	if err != nil {
		return fail(err)
	}
	if err := syscall.Flock(lock, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			say("busy")
			return 0
		}
		return fail(err)
	}
	sock := filepath.Join(hdir, jobdir.HostSocket)
	os.Remove(sock) // a dead host's; the lock says none runs
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fail(err)
	}
	h := &host{state: state, reaper: newReaper(), ln: ln, jobs: map[*supervisor]struct{}{}}
	stopReaper := make(chan struct{})
	reaped := h.reaper.run(stopReaper)
	defer func() { close(stopReaper); <-reaped }()
	stopTerm := h.forwardTerm()
	defer stopTerm()
	h.mu.Lock()
	h.idle = time.AfterFunc(hostFirstWait, h.exitIfIdle)
	h.trim = time.AfterFunc(time.Hour, trimStartup)
	h.trim.Stop()
	h.mu.Unlock()
	defer h.trim.Stop()
	trimStartup()
	say("ok")
	h.serve()
	h.wg.Wait()
	return 0
}

// holdUntilExit opens the host's lock file as a bare descriptor that is
// never closed: the kernel releases the flock only as the process ends,
// after its memory (and with it its command line) is gone. Whoever sees
// the lock free (WaitHostGone) then finds no host process left, not one
// that has let go of the lock but not yet exited.
func holdUntilExit(path string) (int, error) {
	f, err := statedir.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("hold %s: %w", path, err)
	}
	return fd, nil
}

// forwardTerm forwards SIGTERM to the command of every running job (the
// host stays to record how they end); the returned function stops it.
func (h *host) forwardTerm() func() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range term {
			h.mu.Lock()
			for s := range h.jobs {
				s.cmdProc.Signal(syscall.SIGTERM)
			}
			h.mu.Unlock()
		}
	}()
	return func() { signal.Stop(term); close(term); <-done }
}

// serve accepts requests until the listener is closed (exitIfIdle).
func (h *host) serve() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: wait a little rather than spin.
			fmt.Fprintln(os.Stderr, "supervisor host: accept:", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !h.begin() {
			json.NewEncoder(c).Encode(jobdir.HostResponse{Fallback: "the host is exiting"})
			c.Close()
			continue
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.handle(c)
			// Starting a job touches code (the container's setup, above
			// all) that an idle job never needs again: once starts pause,
			// give it back.
			h.mu.Lock()
			h.trim.Reset(trimDelay)
			h.mu.Unlock()
		}()
	}
}

// begin counts a new request in; false when the host is exiting.
func (h *host) begin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.active++
	h.idle.Stop()
	return true
}

// end counts a request or a job out; the last one out starts the linger.
func (h *host) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active--
	if h.active == 0 {
		h.idle.Reset(hostLinger)
	}
}

// exitIfIdle closes the listener if nothing came meanwhile, which ends
// serve and so the host.
func (h *host) exitIfIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active > 0 || h.closing {
		return
	}
	h.closing = true
	h.ln.Close()
}

// handle serves one request: it starts the job, answers, and supervises
// the job to its end.
func (h *host) handle(c net.Conn) {
	ended := false
	defer func() {
		if !ended {
			h.end()
		}
	}()
	defer c.Close()
	answer := func(r jobdir.HostResponse) { json.NewEncoder(c).Encode(r) }
	// Only a job's first stage, started by the registry, calls here; a
	// sandboxed command could ask for any program to be run unconfined.
	if err := jobdir.CheckUnconfinedPeer(c); err != nil {
		fmt.Fprintf(os.Stderr, "supervisor host: connection refused: %v\n", err)
		return
	}
	var req jobdir.HostRequest
	if err := json.NewDecoder(io.LimitReader(c, jobdir.MaxHostRequest)).Decode(&req); err != nil {
		answer(jobdir.HostResponse{Error: "bad request: " + err.Error()})
		return
	}
	dir, err := h.jobDir(req.Dir)
	if err != nil {
		answer(jobdir.HostResponse{Error: err.Error()})
		return
	}
	var spec jobdir.Spec
	if ok, err := jobdir.ReadJSON(filepath.Join(dir, jobdir.FileJob), &spec); !ok || err != nil || spec.ID != filepath.Base(dir) {
		answer(jobdir.HostResponse{Error: fmt.Sprintf("no readable %s in %s (%v)", jobdir.FileJob, dir, err)})
		return
	}
	if len(req.Argv) == 0 || req.Path == "" {
		answer(jobdir.HostResponse{Error: "no command"})
		return
	}
	s := newSupervisor(dir)
	s.env, s.cwd, s.hosted, s.reaper = req.Env, req.Cwd, true, h.reaper
	if s.env == nil {
		s.env = []string{} // never this process's own
	}
	err = s.startPrepared(spec, req.Path, req.Argv)
	var nc *noContainerError
	switch {
	case errors.As(err, &nc):
		answer(jobdir.HostResponse{Fallback: nc.why})
		return
	case err != nil:
		if werr := recordStartFail(dir, err); werr != nil {
			answer(jobdir.HostResponse{Error: werr.Error()})
			return
		}
		answer(jobdir.HostResponse{OK: true})
		return
	}
	s.env, s.cmd.Env = nil, nil // the wrapper has it; the host keeps no reference
	ln := s.listenOrWarn()
	pr, _ := s.pidRecord()
	if err := jobdir.WriteJSON(filepath.Join(dir, jobdir.FilePID), pr); err != nil {
		s.logf("%v", err)
	}
	h.mu.Lock()
	h.jobs[s] = struct{}{}
	h.mu.Unlock()
	answer(jobdir.HostResponse{OK: true})
	c.Close()
	ended = true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer h.end()
		s.run(ln, false)
		h.mu.Lock()
		delete(h.jobs, s)
		h.mu.Unlock()
	}()
}

// jobDir checks that dir is a job directory of this host's state
// directory, private to this user, and returns it cleaned.
func (h *host) jobDir(dir string) (string, error) {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) || filepath.Dir(dir) != filepath.Join(h.state, "jobs") {
		return "", fmt.Errorf("%s is not a job directory of %s", dir, h.state)
	}
	if err := statedir.CheckClosedDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}
