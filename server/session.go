package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// session is one client's state: its runbox session (made by its first
// tool call, with an environment opened by its first command), the asker
// that elicits its approvals, its view of the job registry and the pump
// that sends its job events.
type session struct {
	srv *Server
	mcp *mcp.ServerSession
	id  string // the runbox session id, also the owner of its jobs

	mu     sync.Mutex
	closed bool
	svc    *service.Session
	asker  *elicitAsker // nil: the client cannot be asked
	cwd    string       // the working directory its last command reported

	jobsMu sync.Mutex // held while the registry is reached
	jobs   *service.OwnedJobs

	kernelMu  sync.Mutex // held while the kernel is looked up or made
	hadKernel bool       // the pool has made a kernel for this session

	pumping  bool             // guarded by mu
	noticeMu sync.Mutex       // serialises notices, level changes, (un)subscriptions and takes of held events
	level    mcp.LoggingLevel // the client's log level (logging/setLevel); guarded by noticeMu
	// held are the events the session took from the registry without
	// sending them, oldest first: below level, or awaiting a subscribed
	// client's read. A read, list or poll takes them. Guarded by noticeMu.
	held []procregistry.Event
	// subscribed: the client subscribed to EventsURI, so events wait in
	// held for its read instead of going out as log messages. announced:
	// it was sent notifications/resources/updated and has not read since.
	// Both guarded by noticeMu.
	subscribed, announced bool

	pumpCtx  context.Context
	stopPump context.CancelFunc
	wg       sync.WaitGroup

	closeOnce sync.Once // close tears down once (a DELETE, then the watcher)
	closeErr  error
}

func newSession(s *Server, ss *mcp.ServerSession) *session {
	ctx, cancel := context.WithCancel(s.ctx)
	return &session{srv: s, mcp: ss, id: "mcp-" + randomID(), pumpCtx: ctx, stopPump: cancel, level: defaultLevel}
}

// service returns the runbox session, making it on first use. The client
// has initialized by then, so its capabilities are known: a client that
// declared elicitation gets an asker.
func (s *session) service() (*service.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("runbox: session %s: %w", s.id, envs.ErrClosed)
	}
	if s.svc != nil {
		return s.svc, nil
	}
	opts := service.SessionOptions{ID: s.id, Backend: s.srv.opts.Backend, Spec: s.srv.opts.Spec,
		RecordChanges: s.srv.svc.Config().Workspace.ChangesOn(true)}
	opts.Spec.Sandbox = s.sandbox()
	if canElicit(s.mcp) {
		s.asker = newElicitAsker(s.mcp, s.srv.opts.ApprovalTimeout)
		opts.Asker = s.asker
	}
	ss, err := s.srv.svc.NewSession(opts)
	if err != nil {
		if s.asker != nil {
			s.asker.Close()
			s.asker = nil
		}
		return nil, err
	}
	s.svc = ss
	return ss, nil
}

// MetaSandbox is the key of initialize's _meta under which a client may
// ask for a stricter sandbox for its session ("read-only", "workspace").
const MetaSandbox = "runbox/sandbox"

// sandbox is the profile of the session's local commands: the server's,
// or a stricter one the client asked for in its initialize _meta. A
// client can tighten its own session's sandbox, never loosen it: a
// request for a looser profile is ignored (and logged).
func (s *session) sandbox() string {
	server := s.srv.opts.Spec.Sandbox
	if p, err := s.srv.svc.SandboxPolicy(s.srv.opts.Spec); err == nil {
		server = p.Profile
	}
	ip := s.mcp.InitializeParams()
	if ip == nil || ip.Meta == nil {
		return s.srv.opts.Spec.Sandbox
	}
	asked, _ := ip.Meta[MetaSandbox].(string)
	if asked == "" {
		return s.srv.opts.Spec.Sandbox
	}
	if strictness(asked) < strictness(server) || strictness(asked) < 0 {
		s.srv.log.Warn("runbox: a client asked for a looser sandbox than the server's; kept the server's", "asked", asked, "server", server)
		return s.srv.opts.Spec.Sandbox
	}
	return asked
}

// strictness orders the profiles by how much they confine (-1: unknown).
func strictness(profile string) int {
	return slices.Index([]string{"off", "workspace", "read-only"}, profile)
}

// canElicit reports whether the client declared form elicitation (an
// elicitation capability with neither mode named counts as form). It is
// the rule ServerSession.Elicit (server.go) applies to a form request,
// checked before a session gets an asker rather than at its first
// question.
func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// ownedJobs returns the session's jobs in the job registry, reaching the
// registry on first use.
func (s *session) ownedJobs(ctx context.Context) (*service.OwnedJobs, error) {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	if s.jobs != nil {
		return s.jobs, nil
	}
	ss, err := s.service()
	if err != nil {
		return nil, err
	}
	s.jobs, err = s.srv.sessionJobs(ctx, ss) // see jobs.go
	return s.jobs, err
}

// kernel returns the session's Python kernel from the server's pool,
// made on first use in the session's environment (its interpreter starts
// with the first cell). lost is true when the session had a kernel that
// the pool has since closed (evicted for another session, or idle): its
// variables are gone.
func (s *session) kernel(ctx context.Context) (k *kernel.Kernel, lost bool, err error) {
	s.kernelMu.Lock()
	defer s.kernelMu.Unlock()
	ss, err := s.service()
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, false, fmt.Errorf("runbox: session %s: %w", s.id, envs.ErrClosed)
	}
	k, made, err := s.srv.kernels.Get(ctx, kernel.Key{Owner: s.id, Python: kernel.DefaultPython}, func() (*kernel.Kernel, error) {
		return ss.NewKernel(ctx, kernel.Options{Tools: s.srv.kernelTools(s)})
	})
	if err != nil {
		return nil, false, err
	}
	lost = made && s.hadKernel
	s.hadKernel = true
	return k, lost, nil
}

// existingJobs returns the session's jobs if it ever reached the registry.
func (s *session) existingJobs() *service.OwnedJobs {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	return s.jobs
}

// startPump starts sending the session's job events to its client, once.
// The pump is started under mu and never after close, which waits for it.
func (s *session) startPump(jobs *service.OwnedJobs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.pumping {
		return
	}
	s.pumping = true
	s.wg.Go(func() {
		jobs.Deliver(s.pumpCtx, s.notify, s.srv.opts.Redeliver)
	})
}

// setCwd remembers the directory a command reported.
func (s *session) setCwd(dir string) {
	if dir == "" {
		return
	}
	s.mu.Lock()
	s.cwd = dir
	s.mu.Unlock()
}

// jobDir is where a background job runs when it names no directory: where
// the session's last command ended, else the server's default.
func (s *session) jobDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd != "" {
		return s.cwd
	}
	if s.srv.opts.JobDir != "" {
		return s.srv.opts.JobDir
	}
	return s.srv.opts.Spec.Dir
}

// close ends the session: its event pump stops, its session-lifetime jobs
// are killed, pending questions are refused, and its environment is torn
// down with its whole process tree. Later calls wait for the first one
// and return its error.
func (s *session) close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.teardown(ctx) })
	return s.closeErr
}

func (s *session) teardown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	svc, asker := s.svc, s.asker
	s.mu.Unlock()
	s.stopPump()
	s.wg.Wait()
	var errs []error
	if jobs := s.existingJobs(); jobs != nil {
		if _, err := jobs.End(ctx); err != nil {
			errs = append(errs, fmt.Errorf("ending its jobs: %w", err))
		}
	}
	s.kernelMu.Lock() // no kernel is being made for it any more
	err := s.srv.kernels.Remove(ctx, func(k kernel.Key) bool { return k.Owner == s.id })
	s.kernelMu.Unlock()
	if err != nil {
		errs = append(errs, fmt.Errorf("closing its kernel: %w", err))
	}
	if asker != nil {
		asker.Close()
	}
	if svc != nil {
		if err := svc.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing its environment: %w", err))
		}
	}
	return errors.Join(errs...)
}
