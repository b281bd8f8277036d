package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

// Defaults of [Options] fields left zero.
const (
	DefaultMaxSessions = 16
	DefaultMaxJobs     = 16
	// DefaultWaitTimeout bounds a process wait that names no timeout.
	DefaultWaitTimeout = 60 * time.Second
	// ApprovalTimeout is how long a question to the human waits when
	// Options.ApprovalTimeout is zero.
	ApprovalTimeout = 5 * time.Minute
)

// ErrClosed is returned by a closed [Server].
var ErrClosed = errors.New("server: closed")

// Options configure a [Server].
type Options struct {
	// Service runs everything. Required.
	Service *service.Service
	// Backend is where each session's commands run. Empty means the
	// configured backend.
	Backend string
	// Spec opens each session's environment (directory, image, limits,
	// network), as `runbox run` flags would.
	Spec envs.Spec
	// Env is laid over every command's environment. Nil adds nothing.
	Env map[string]string
	// Jobs returns the job registry background jobs run in (the per-user
	// job daemon), called when a session first needs it. Nil means
	// background jobs are not available.
	Jobs func(context.Context) (service.SessionJobs, error)
	// JobDir is the working directory of a background job that names none
	// before its session has reported a directory of its own. Empty means
	// the registry's.
	JobDir string
	// MaxSessions caps the concurrent client sessions. Zero means
	// DefaultMaxSessions; negative means no cap.
	MaxSessions int
	// MaxJobs caps each session's live background jobs. Zero means
	// DefaultMaxJobs; negative means no cap.
	MaxJobs int
	// ApprovalTimeout is how long a question to the human may wait for
	// an answer; no answer is a refusal. Zero means [ApprovalTimeout].
	ApprovalTimeout time.Duration
	// Redeliver is how long an undelivered job event waits before it is
	// sent again. Zero means service.DefaultRedeliver.
	Redeliver time.Duration
	// MaxKernels caps the Python kernels (execute_code) alive at once,
	// across sessions; the least recently used idle one is closed to make
	// room. Zero means kernel.DefaultMaxKernels; negative means no cap.
	MaxKernels int
	// KernelIdle closes a kernel that has run nothing for this long. Zero
	// means kernel.DefaultIdleTimeout; negative means never.
	KernelIdle time.Duration
	// Sync, when set, gives every session the task's container with the
	// local directory pushed to its workspace before each foreground
	// command, and adds the sync tool (push, diff). Nil means no sync.
	Sync *SyncOptions
	// Version is reported to clients. Empty means "dev".
	Version string
	// Logger receives the server's own logs. Nil discards them.
	Logger *slog.Logger
}

// Server is runbox's MCP server: one [mcp.Server] with runbox's tools, and
// the client sessions it serves. Close it when done.
type Server struct {
	opts Options
	svc  *service.Service
	log  *slog.Logger
	mcp  *mcp.Server

	kernels *kernel.Pool                  // every session's execute_code kernel
	sender  mcp.MethodHandler             // the SDK's sending handler, to notify one session (set by keepSender)
	schemas map[string]*jsonschema.Schema // each tool's input schema, by name (set by addTools)

	ctx    context.Context // ends at Close: stops calls, pumps and watchers
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Server started

	mu       sync.Mutex
	closed   bool
	sessions map[*mcp.ServerSession]*session
	streams  map[string]int // open standalone SSE streams by Mcp-Session-Id
	// By Mcp-Session-Id: the index of the last event of the standalone
	// stream written to the client, and the ids of the requests the
	// client cancelled (see sse.go).
	delivered map[string]int
	cancelled map[string]map[string]bool
}

// New makes a Server from opts.
func New(opts Options) (*Server, error) {
	if opts.Service == nil {
		return nil, errors.New("server: Options.Service is required")
	}
	o := opts
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxJobs == 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = ApprovalTimeout
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backend := o.Backend
	if backend == "" {
		backend = opts.Service.Config().Backend
	}
	if _, err := opts.Service.Providers().Lookup(backend); err != nil {
		return nil, err
	}
	o.Backend = backend
	if o.Sync != nil {
		if err := o.Sync.apply(&o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: o, svc: o.Service, log: log, ctx: ctx, cancel: cancel, sessions: map[*mcp.ServerSession]*session{}, streams: map[string]int{},
		delivered: map[string]int{}, cancelled: map[string]map[string]bool{}}
	s.kernels = kernel.NewPool(kernel.PoolOptions{Max: o.MaxKernels, IdleTimeout: o.KernelIdle})
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "runbox", Title: "runbox", Version: o.Version}, &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    log,
		SupportedProtocolVersions: sessionProtocolVersions(),
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        s.unsubscribe,
	})
	s.mcp.AddReceivingMiddleware(s.sessionMiddleware, s.argsMiddleware)
	s.mcp.AddSendingMiddleware(s.keepSender)
	s.addEventsResource()
	if err := s.addTools(); err != nil {
		cancel()
		s.kernels.Close(context.Background())
		return nil, err
	}
	return s, nil
}

const instructions = `runbox runs shell commands for you in a sandboxed session that keeps its state (cd, export) between calls.
Use terminal to run a command; set background for long-running work and process to manage it.
Dangerous commands may need a human's approval; hardline commands are never run.
Background jobs report completion, heartbeats and watch matches in the resource ` + EventsURI + ` (subscribe to be told when there is something to read; reading takes them); a client that does not subscribe gets them as log notifications.`

// sessionProtocolVersions are the protocol versions that have sessions:
// those before the sessionless 2026-07-28 protocol. The SDK's
// SupportedProtocolVersions (shared.go) includes 2026-07-28, and
// ServerSession.handle (server.go) serves a request whose _meta names it
// without any initialize (SEP-2575); with the list narrowed it answers
// such a request with CodeUnsupportedProtocolVersion. (An initialize that
// asks for 2026-07-28 is answered with 2025-11-25 by the SDK's
// negotiatedVersion, shared.go, either way.)
func sessionProtocolVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

// MCP is the underlying SDK server (to connect transports of one's own).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// sessionMiddleware opens a runbox session for each client at its
// initialize request, refuses clients beyond the cap, and starts every
// session at log level "info" so job notifications reach clients that
// never set a level. A level the client sets later is the session's too:
// the job events it keeps back are held, not lost (notify.go).
//
// The SDK starts a session with no level: ServerSession.Log (server.go)
// sends nothing while the session's LogLevel is "" (the level
// ServerSession.setLevel stores), so without this a client that never
// sends logging/setLevel would never see a job notice.
func (s *Server) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			if err := checkLevel(req); err != nil {
				return nil, err
			}
			if sess := s.sessionOf(req.GetSession()); sess != nil {
				level := req.GetParams().(*mcp.SetLoggingLevelParams).Level
				return sess.setLevel(level, func() (mcp.Result, error) { return next(ctx, method, req) })
			}
		}
		if method != "initialize" {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok {
			return next(ctx, method, req)
		}
		if err := s.admit(ss); err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, err // the watcher ends the session with the connection
		}
		_, lerr := next(ctx, "logging/setLevel", &mcp.ServerRequest[*mcp.SetLoggingLevelParams]{
			Session: ss, Params: &mcp.SetLoggingLevelParams{Level: "info"},
		})
		if lerr != nil {
			s.log.Warn("server: default log level", "err", lerr)
		}
		return res, nil
	}
}

// sessionOf is the runbox session of a client session, nil if none.
func (s *Server) sessionOf(cs mcp.Session) *session {
	ss, ok := cs.(*mcp.ServerSession)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[ss]
}

// admit registers a session for ss and starts the watcher that ends it
// with the client's session.
func (s *Server) admit(ss *mcp.ServerSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.sessions[ss]; dup {
		return nil // the SDK refuses a second initialize itself
	}
	if err := s.roomLocked(); err != nil {
		return err
	}
	sess := newSession(s, ss)
	s.sessions[ss] = sess
	s.wg.Go(func() {
		ss.Wait()
		s.end(sess)
	})
	return nil
}

// roomFor returns nil if one more session may open, else the JSON-RPC
// error that refuses it.
func (s *Server) roomFor() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roomLocked()
}

func (s *Server) roomLocked() error {
	if s.closed {
		return &jsonrpc.Error{Code: codeServerBusy, Message: "runbox: the server is shutting down"}
	}
	if s.opts.MaxSessions > 0 && len(s.sessions) >= s.opts.MaxSessions {
		return &jsonrpc.Error{Code: codeServerBusy, Message: fmt.Sprintf(
			"runbox: too many sessions: %d are open (the cap is %d; see runbox serve --max-sessions)", len(s.sessions), s.opts.MaxSessions)}
	}
	return nil
}

// checkLevel refuses a logging/setLevel naming no level the protocol
// defines (the SDK would store any string: ServerSession.setLevel in
// server.go takes params.Level unchecked, and Log's compareLevels then
// ranks an unknown level as debug).
func checkLevel(req mcp.Request) error {
	p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
	if ok && p != nil {
		switch p.Level { // RFC 5424's names, as the protocol defines them
		case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
			return nil
		}
	}
	got := ""
	if ok && p != nil {
		got = string(p.Level)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"runbox: invalid params: level %q is not a log level; expected one of debug, info, notice, warning, error, critical, alert, emergency", got)}
}

// stream counts a standalone SSE stream of session id opening (+1) or
// closing (-1).
func (s *Server) stream(id string, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[id] += delta; s.streams[id] <= 0 {
		delete(s.streams, id)
	}
}

// listening reports whether the HTTP session id has a standalone stream
// open, the only way a notice unrelated to a call reaches its client.
func (s *Server) listening(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id] > 0
}

// known reports whether id (an Mcp-Session-Id) names an open session.
func (s *Server) known(id string) bool {
	return s.byID(id) != nil
}

func (s *Server) byID(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss, x := range s.sessions {
		if ss.ID() == id {
			return x
		}
	}
	return nil
}

// expire closes the session named id whose client is gone, and reports
// whether it did: a session with a keep-awake job running is in use,
// whatever its client does, and is kept (with its sandbox) until that
// job ends and it idles again. Its runbox session is torn down and its
// MCP session closed.
func (s *Server) expire(id string) bool {
	sess := s.byID(id)
	if sess == nil {
		return true
	}
	if jobs := sess.existingJobs(); jobs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		awake, err := jobs.KeepsAwake(ctx)
		cancel()
		if err == nil && awake {
			s.log.Info("server: an idle session is kept: a keep-awake job runs in it", "session", sess.id)
			return false
		}
	}
	s.log.Info("server: closing an idle session: its client is gone", "session", sess.id)
	// Torn down first, as on DELETE (endOnDelete): ServerSession.Close
	// waits for the calls in flight.
	s.endByID(id)
	sess.mcp.Close()
	return true
}

// session returns the runbox session of the client behind req.
func (s *Server) session(req *mcp.CallToolRequest) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sess := s.sessions[req.Session]
	if sess == nil {
		return nil, fmt.Errorf("runbox: no session for this client (it did not initialize)")
	}
	return sess, nil
}

// end tears a session down and forgets it.
func (s *Server) end(sess *session) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sess.close(ctx); err != nil {
		s.log.Warn("server: session teardown", "session", sess.id, "err", err)
	}
	s.mu.Lock()
	delete(s.sessions, sess.mcp)
	if id := sess.mcp.ID(); id != "" {
		delete(s.delivered, id)
		delete(s.cancelled, id)
	}
	s.mu.Unlock()
}

// endByID tears down the runbox session of the client session named id
// (its Mcp-Session-Id), if there is one, without forgetting it: the
// watcher forgets it once the client session has ended.
func (s *Server) endByID(id string) {
	sess := s.byID(id)
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sess.close(ctx); err != nil {
		s.log.Warn("server: session teardown", "session", sess.id, "err", err)
	}
}

// endSession tears down the runbox session of the client session ss, if
// it has one, without forgetting it (the watcher does, once ss ended).
func (s *Server) endSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	sess := s.sessions[ss]
	s.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sess.close(ctx); err != nil {
		s.log.Warn("server: session teardown", "session", sess.id, "err", err)
	}
}

// Sessions is the number of open client sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Close ends every client session (their running tool calls are
// cancelled, their environments and session-lifetime jobs torn down) and
// waits for the Server's goroutines. The Service stays open.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	open := make([]*mcp.ServerSession, 0, len(s.sessions))
	for ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	s.cancel()
	for _, ss := range open {
		ss.Close()
	}
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.kernels.Close(ctx)
}

// callContext is ctx that also ends when the Server closes, so no tool
// call outlives it. The SDK would not end it: mcp.Server has no Close,
// ServerSession.Close (server.go) waits for the calls in flight without
// cancelling them, and jsonrpc2 NewConnection (internal/jsonrpc2/conn.go)
// keeps the context given to Connect from reaching handlers (notDone).
func (s *Server) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
