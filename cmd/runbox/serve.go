package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/statedir"
)

type serveOptions struct {
	// Where commands run: the flags of run.
	placeFlags
	outputLimit int

	// Transports.
	http      string
	tokenFile string
	noToken   bool // --insecure-loopback-no-token: only on a loopback address
	socket    string
	hosts     []string
	origins   []string

	// Limits of the server.
	maxSessions     int
	maxJobs         int
	maxKernels      int
	kernelIdle      time.Duration
	approvalTimeout time.Duration
	sessionIdle     time.Duration
	dockerPool      int // -1: the configuration's docker.pool
}

func newServeCommand(a *app) *cobra.Command {
	var opts serveOptions
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve runbox to AI agents over the Model Context Protocol",
		Long: `Serve runbox as an MCP server. Its tools:

  terminal       run a shell command in the session (cd and export carry over),
                 in the foreground or as a background job
  process        list, poll, log, wait for, kill, write to, submit to, close
                 and hand off the session's background jobs
  execute_code   run Python in the session's persistent kernel, with
                 runbox.terminal and runbox.process callable from the code
  check_command  the command gate's verdict on a command, without running it
  undo           put the workspace back as it was before the last command (or
                 a step); every terminal result says what its command changed
  sync           (with --sync) push the project to the task's workspace, or
                 diff what the commands changed there
  tasks          list the persistent tasks (--task) across backends, or
                 remove one everywhere it lives

By default one client is served over stdin and stdout (the command line an MCP
client starts). With --http the streamable HTTP transport is served at /mcp:
every request must carry "Authorization: Bearer TOKEN", with the token read
from --token-file or generated into a 0600 file whose path is printed; Host
and Origin are checked against DNS rebinding, and an address beyond loopback
is refused unless --token-file is given. With --socket the same is served on
a Unix socket that only this user can reach (peer uid checked), no token.

Each client session gets its own environment on the backend (the flags below,
as for run), opened by its first command and torn down with its whole process
tree when the session ends; its background jobs are killed with it unless they
were started with detach or handed off. An HTTP client that goes away without
ending its session (no request and no stream open for --session-idle) has its
session closed the same way. Job completions, heartbeats and watch matches
wait in the resource runbox://jobs/events for a client that subscribes to it
(notifications/resources/updated says there is something to read); other
clients are sent them as MCP log-message notifications (logger "runbox.jobs").
Each event is delivered once.

Every command passes the command gate; a command that needs approval is asked
of the human through the client (MCP elicitation) when the client can ask, and
refused with a hint otherwise.`,
		Example: `  runbox serve
  runbox serve --backend docker --image debian:bookworm
  runbox serve --http 127.0.0.1:8765
  runbox serve --socket /run/user/1000/runbox-mcp.sock`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), a, &opts)
		},
	}
	f := cmd.Flags()
	opts.register(f, forServe)
	f.IntVar(&opts.outputLimit, "output-limit", 0, "bytes of output kept per tool call (default from config)")
	f.StringVar(&opts.http, "http", "", "serve streamable HTTP at ADDR (host:port) on /mcp instead of stdio")
	f.StringVar(&opts.tokenFile, "token-file", "", "file holding the bearer token for --http (default: generate one)")
	f.BoolVar(&opts.noToken, "insecure-loopback-no-token", false, "with --http on a loopback address only: check no bearer token (for test suites that cannot send one; every local user can then reach the server)")
	f.StringVar(&opts.socket, "socket", "", "serve streamable HTTP on a Unix socket at PATH (owner only, no token)")
	f.StringArrayVar(&opts.hosts, "allow-host", nil, "accept this Host name on --http besides loopback names (repeatable)")
	f.StringArrayVar(&opts.origins, "allow-origin", nil, "accept requests from this browser Origin (repeatable)")
	f.IntVar(&opts.maxSessions, "max-sessions", server.DefaultMaxSessions, "concurrent client sessions at most (-1: no cap)")
	f.IntVar(&opts.maxJobs, "max-jobs", server.DefaultMaxJobs, "live background jobs per session at most (-1: no cap)")
	f.IntVar(&opts.maxKernels, "max-kernels", kernel.DefaultMaxKernels, "Python kernels (execute_code) alive at once, across sessions; the least recently used idle one is closed for a new one (-1: no cap)")
	f.DurationVar(&opts.kernelIdle, "kernel-idle", kernel.DefaultIdleTimeout, "close a Python kernel that has run nothing for this long (-1s: never)")
	f.DurationVar(&opts.approvalTimeout, "approval-timeout", server.ApprovalTimeout, "how long a question to the human waits; no answer refuses")
	f.DurationVar(&opts.sessionIdle, "session-idle", server.DefaultSessionIdle, "close an HTTP session whose client has had no request and no stream open for this long (-1s: never)")
	f.IntVar(&opts.dockerPool, "docker-pool", -1, "ready containers kept per docker spec, so a session's first command skips the container's start (default from config: docker.pool, 0 = none)")
	return cmd
}

// noArgs is cobra.NoArgs as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{errorf("%s takes no arguments; see --help", cmd.CommandPath())}
	}
	return nil
}

// serveGCPercent is the garbage collector's target in runbox serve. What
// a server keeps between calls is small (its sessions, the gate's
// automata), while each call allocates and drops its request, result and
// command; back to back, collecting at the default target took about a
// tenth of a tools/call (runbox bench's mcp.terminal, 1.81 ms at 100
// against 1.64 ms at 400), for some 16 MB more resident memory.
const serveGCPercent = 400

func runServe(ctx context.Context, a *app, opts *serveOptions) error {
	lessGC(serveGCPercent)
	srv, svc, err := newMCPServer(a, opts)
	if err != nil {
		return err
	}
	defer svc.Close(context.WithoutCancel(ctx))
	defer srv.Close()
	defer startTaskReaper(ctx, svc)()
	svc.Reap(ctx, cmp.Or(opts.backend, svc.Config().Backend))
	if opts.http == "" && opts.socket == "" {
		// A client that is gone leaves a broken pipe behind: a write to
		// it must fail (and end the session, torn down), not kill runbox
		// with SIGPIPE, as Go does for stdout by default. Notify, not
		// Ignore: an ignored SIGPIPE would be inherited by the commands.
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
		return srv.ServeStdio(ctx, readCloser(a.stdin), stdoutCloser(a.stdout))
	}
	return serveHTTP(ctx, a, srv, opts)
}

// newMCPServer builds the service and the server from the flags.
func newMCPServer(a *app, opts *serveOptions) (*server.Server, *service.Service, error) {
	cfg := a.cfg
	if opts.timeout > 0 {
		cfg.Timeout = config.Duration(opts.timeout)
	}
	if opts.outputLimit > 0 {
		cfg.OutputLimit = opts.outputLimit
	}
	if opts.dockerPool >= 0 {
		cfg.Docker.Pool = opts.dockerPool
	}
	if opts.tokenFile != "" {
		// The token opens every session of this server: no command
		// of one may read it, wherever the user keeps it.
		if abs, err := filepath.Abs(opts.tokenFile); err == nil {
			cfg.Sandbox.DenyRead = append(slices.Clone(cfg.Sandbox.DenyRead), abs)
		}
	}
	spec, err := opts.spec(a.svc.Limits())
	if err != nil {
		return nil, nil, err
	}
	env, err := parseEnvFlags(opts.env)
	if err != nil {
		return nil, nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, errorf("%v", err)
	}
	var sync *server.SyncOptions
	if opts.sync != "" || opts.task != "" {
		if err := a.checkTaskFlags(&opts.placeFlags, cmp.Or(opts.backend, cfg.Backend)); err != nil {
			return nil, nil, err
		}
		if spec.Settings == nil {
			spec.Settings = map[string]string{}
		}
		spec.Settings[service.SettingTask] = opts.task
	}
	if opts.sync != "" {
		state, err := a.checkedStateDir()
		if err != nil {
			return nil, nil, err
		}
		sync = &server.SyncOptions{Workspace: a.syncOptions(opts.task, opts.sync, state, opts.syncExclude)}
	}
	svc, err := service.New(service.Options{
		Config: cfg, Environ: a.environ(), Getenv: a.getenv, Yolo: a.yolo,
		Subreaper: a.subreaper(), Confiner: a.confiner(), Progress: a.stderr, Logger: a.log, WarmPool: true,
	})
	if err != nil {
		return nil, nil, err
	}
	announceSandbox(a, svc, cmp.Or(opts.backend, cfg.Backend), spec)
	if opts.task == "" {
		if err := svc.Warm(cmp.Or(opts.backend, cfg.Backend), spec); err != nil {
			a.log.Debug("serve: warm pool", "err", err)
		}
	}
	srv, err := server.New(server.Options{
		Service: svc, Backend: opts.backend, Spec: spec, Env: env,
		Jobs:        func(ctx context.Context) (service.SessionJobs, error) { return a.jobsClient(ctx) },
		JobDir:      cmp.Or(opts.cwd, wd),
		MaxSessions: opts.maxSessions, MaxJobs: opts.maxJobs, MaxKernels: opts.maxKernels, KernelIdle: opts.kernelIdle,
		ApprovalTimeout: opts.approvalTimeout, Logger: a.log, Sync: sync,
	})
	if err != nil {
		svc.Close(context.Background())
		return nil, nil, err
	}
	return srv, svc, nil
}

// announceSandbox says on stderr, once, the confinement the sessions'
// commands get on this machine: the profile in force, or why every such
// command will be refused. Backends that cannot touch this machine need no
// line: their commands run in the backend's own sandbox.
func announceSandbox(a *app, svc *service.Service, backend string, spec envs.Spec) {
	if !svc.HostAccess(context.Background(), backend, spec) {
		return
	}
	pol, err := svc.SandboxPolicy(spec)
	switch {
	case err != nil:
		fmt.Fprintf(a.stderr, "runbox: sandbox: every local command will be refused: %v\n", err)
	case pol.Profile == confine.ProfileOff:
		fmt.Fprintf(a.stderr, "runbox: sandbox off: local commands run unconfined\n")
	default:
		fmt.Fprintf(a.stderr, "runbox: sandbox %s (network %s): local commands run confined\n", pol.Profile, pol.Network)
	}
}

// socketOutOfReach refuses a --socket path that confined commands could
// reach: inside the workspace (the git root of serve's directory) or a
// directory the sandbox lets them write (their caches), as written or
// once its links are followed. The link runbox puts at the path sits in
// that directory: a command could replace it with a socket of its own and
// take the client's requests, or point a directory on the way elsewhere.
func socketOutOfReach(a *app, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return errorf("serve: --socket %s: %v", path, err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return errorf("serve: finding the current directory: %v", err)
	}
	pol := confine.DefaultPolicy(confine.ProfileWorkspace, cwd, a.getenv("HOME"))
	places := []string{abs}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		places = append(places, filepath.Join(dir, filepath.Base(abs)))
	}
	for _, w := range append([]string{pol.Workspace}, pol.Writable...) {
		roots := []string{w}
		if r, err := filepath.EvalSymlinks(w); err == nil && r != w {
			roots = append(roots, r)
		}
		for _, p := range places {
			for _, r := range roots {
				if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
					return errorf("serve: --socket %s is inside %s, which sandboxed commands can write: one could put a socket of its own there; choose a path outside it (for example under $XDG_RUNTIME_DIR)", path, w)
				}
			}
		}
	}
	return nil
}

// serveHTTP serves the streamable HTTP transport on --http and/or
// --socket until ctx ends.
func serveHTTP(ctx context.Context, a *app, srv *server.Server, opts *serveOptions) error {
	type listener struct {
		ln   net.Listener
		opts server.HTTPOptions
	}
	var lns []listener
	defer func() {
		for _, l := range lns {
			l.ln.Close()
		}
	}()
	if opts.http != "" {
		token, provisioned, cleanup, err := serveToken(a, opts)
		if err != nil {
			return err
		}
		defer cleanup()
		ln, err := server.ListenTCP(opts.http, provisioned)
		if err != nil {
			return usageError{err}
		}
		hosts := opts.hosts
		if h, _, err := net.SplitHostPort(opts.http); err == nil && h != "" {
			hosts = append(hosts, h)
		}
		lns = append(lns, listener{ln, server.HTTPOptions{Token: token, Hosts: hosts, Origins: opts.origins, SessionIdle: opts.sessionIdle}})
		fmt.Fprintf(a.stderr, "runbox: serving MCP at http://%s%s\n", ln.Addr(), server.Path)
	}
	if opts.socket != "" {
		if err := socketOutOfReach(a, opts.socket); err != nil {
			return usageError{err}
		}
		private := ""
		if state := statedir.Default(a.getenv); state != "" {
			private = filepath.Join(state, "serve", "sockets")
		}
		ln, err := server.ListenUnix(opts.socket, private)
		if err != nil {
			return err
		}
		lns = append(lns, listener{ln, server.HTTPOptions{AnyHost: true, Origins: opts.origins, SessionIdle: opts.sessionIdle}})
		fmt.Fprintf(a.stderr, "runbox: serving MCP on unix socket %s at %s\n", opts.socket, server.Path)
	}
	errc := make(chan error, len(lns))
	var servers []*http.Server
	var wg sync.WaitGroup
	for _, l := range lns {
		hs := &http.Server{Handler: srv.HTTPHandler(l.opts), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		wg.Go(func() {
			if err := hs.Serve(l.ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		})
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Ending the sessions first ends their streams, so the listeners can
	// close without waiting for hanging requests.
	srv.Close()
	for _, hs := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hs.Shutdown(sctx)
		cancel()
		hs.Close()
	}
	wg.Wait()
	return err
}

// serveToken is the bearer token for --http: read from --token-file
// (provisioned), or generated into a new 0600 file in the state
// directory whose path is printed, and removed when the server stops.
// With --insecure-loopback-no-token there is none, and only a loopback
// address is accepted: the way in for a test suite that sends no token
// (Host and Origin are still checked).
func serveToken(a *app, opts *serveOptions) (token string, provisioned bool, cleanup func(), err error) {
	if opts.noToken {
		if !server.IsLoopback(opts.http) || opts.tokenFile != "" {
			return "", false, nil, usageError{errorf("--insecure-loopback-no-token needs a loopback --http address (127.0.0.1:PORT) and no --token-file")}
		}
		fmt.Fprintf(a.stderr, "runbox: no bearer token is checked (--insecure-loopback-no-token): every local user can reach this server\n")
		return "", false, func() {}, nil
	}
	if opts.tokenFile != "" {
		tok, err := server.ReadToken(opts.tokenFile)
		if err != nil {
			return "", false, nil, usageError{err}
		}
		return tok, true, func() {}, nil
	}
	state, err := a.stateDir()
	if err != nil {
		return "", false, nil, err
	}
	tok, path, err := server.NewToken(filepath.Join(state, "serve"))
	if err != nil {
		return "", false, nil, err
	}
	fmt.Fprintf(a.stderr, "runbox: bearer token written to %s\n", path)
	return tok, false, func() { os.Remove(path) }, nil
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// stdoutCloser is w that the server may close without closing it; a file
// keeps its SyscallConn, by which the server sees its reader go away.
func stdoutCloser(w io.Writer) io.WriteCloser {
	if f, ok := w.(*os.File); ok {
		return nopFileCloser{f}
	}
	return nopWriteCloser{w}
}

type nopFileCloser struct{ *os.File }

func (nopFileCloser) Close() error { return nil }
