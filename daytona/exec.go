package daytona

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
)

// execEnv runs each command in its own toolbox session: the wrapper
// script uploaded, the session command started asynchronously, its logs
// followed over the websocket, its exit code read when they end.
type execEnv struct {
	s      *sandbox
	sb     *sdk.Sandbox
	tb     *toolbox.APIClient
	policy spawn.Policy

	// ctx is the owner of every process's goroutines: Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	procs  map[*proc]struct{}
}

var (
	_ envs.Environment  = (*execEnv)(nil)
	_ envs.FileTransfer = (*execEnv)(nil)
)

func newExecEnv(s *sandbox, sb *sdk.Sandbox, policy spawn.Policy) *execEnv {
	ctx, cancel := context.WithCancel(context.Background())
	return &execEnv{s: s, sb: sb, tb: sb.ToolboxClient, policy: policy, ctx: ctx, cancel: cancel, procs: map[*proc]struct{}{}}
}

func randomID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// childEnv builds the variables the wrapper exports: the spawn policy's
// over the sandbox's own environment. PATH stays the sandbox's unless the
// command sets it.
func (x *execEnv) childEnv(cmd envs.Command) (map[string]string, *spawn.Result, error) {
	overlay := maps.Clone(x.s.opts.Env)
	if overlay == nil {
		overlay = map[string]string{}
	}
	maps.Copy(overlay, cmd.Env)
	res, err := spawn.Build(spawn.Request{Overlay: overlay, Policy: x.policy})
	if err != nil {
		return nil, nil, fmt.Errorf("daytona: child environment: %w", err)
	}
	env := map[string]string{}
	for _, kv := range res.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOME" {
			if _, set := cmd.Env[k]; !set {
				if _, set := x.s.opts.Env[k]; !set {
					continue
				}
			}
		}
		env[k] = v
	}
	return env, res, nil
}

// gone turns a toolbox error into one matching remote.ErrGone when the
// sandbox no longer exists or is no longer started.
func (x *execEnv) gone(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sb, gerr := x.s.cl.Get(ctx, x.sb.ID)
	switch {
	case status(gerr) == http.StatusNotFound:
		return fmt.Errorf("sandbox %s deleted: %w: %v", x.sb.ID, remote.ErrGone, err)
	case gerr == nil && sb.State != apiclient.SANDBOXSTATE_STARTED:
		return fmt.Errorf("sandbox %s is %s: %w: %v", x.sb.ID, sb.State, remote.ErrGone, err)
	}
	return err
}

// revive starts the sandbox again when it was stopped or archived behind
// runbox's back (Daytona's auto-stop, a user's dashboard), so the command
// runs rather than fails; it reports whether it did.
func (x *execEnv) revive(ctx context.Context) bool {
	sb, err := x.s.cl.Get(ctx, x.sb.ID)
	if err != nil {
		return false
	}
	switch sb.State {
	case apiclient.SANDBOXSTATE_STOPPED, apiclient.SANDBOXSTATE_ARCHIVED:
	default:
		return false
	}
	if err := x.s.start(ctx, sb); err != nil {
		x.s.log.Debug("daytona: restart a stopped sandbox", "id", sb.ID, "err", err)
		return false
	}
	x.s.log.Debug("daytona: restarted a sandbox stopped behind runbox's back", "id", sb.ID, "was", sb.State)
	return true
}

// start uploads the wrapper and starts it in a session of its own.
func (x *execEnv) start(ctx context.Context, cmd envs.Command, relay bool) (*proc, error) {
	if err := cmd.Validate(); err != nil {
		return nil, fmt.Errorf("daytona: %w", err)
	}
	if cmd.PTY != nil {
		return nil, fmt.Errorf("daytona: a toolbox session command has no terminal (the agent, which gives one, is not in use): %w", envs.ErrUnsupported)
	}
	env, sres, err := x.childEnv(cmd)
	if err != nil {
		return nil, err
	}
	argv := cmd.Args
	if cmd.Shell != "" {
		argv = []string{cmd.Shell}
	}
	if err := sres.CheckArgv(argv); err != nil {
		return nil, fmt.Errorf("daytona: %w", err)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = x.s.opts.Dir
	}
	w := wrapper{marker: randomID(), env: env, dir: dir, shell: cmd.Shell, args: cmd.Args, merge: !cmd.SeparateStreams, relay: relay}

	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil, fmt.Errorf("daytona: %w", envs.ErrClosed)
	}
	x.mu.Unlock()

	if err := x.sb.FileSystem.UploadFile(ctx, []byte(w.script()), w.path()); err != nil {
		if !x.revive(ctx) {
			return nil, x.gone(fmt.Errorf("daytona: upload the command's wrapper: %w", err))
		}
		if err := x.sb.FileSystem.UploadFile(ctx, []byte(w.script()), w.path()); err != nil {
			return nil, x.gone(fmt.Errorf("daytona: upload the command's wrapper: %w", err))
		}
	}
	sid := "runbox-" + w.marker
	if err := x.sb.Process.CreateSession(ctx, sid); err != nil {
		return nil, x.gone(fmt.Errorf("daytona: create session: %w", err))
	}
	req := toolbox.NewSessionExecuteRequest(w.command())
	req.SetRunAsync(true)
	resp, hr, err := x.tb.ProcessAPI.SessionExecuteCommand(ctx, sid).Request(*req).Execute()
	if hr != nil && hr.Body != nil {
		hr.Body.Close()
	}
	if err != nil {
		x.deleteSession(sid)
		return nil, x.gone(fmt.Errorf("daytona: start the command: %w", err))
	}
	cid := resp.GetCmdId()
	conn, err := dialLogs(ctx, x.tb, sid, cid)
	if err != nil {
		x.deleteSession(sid)
		return nil, x.gone(fmt.Errorf("daytona: follow the command's output: %w", err))
	}
	p := newProc(x, w.marker, sid, cid, cmd.SeparateStreams)
	if relay {
		p.stdin = &relayWriter{p: p}
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		conn.Close()
		p.kill(context.Background(), envs.SignalStatus(syscall.SIGKILL))
		return nil, fmt.Errorf("daytona: %w", envs.ErrClosed)
	}
	x.procs[p] = struct{}{}
	x.mu.Unlock()
	p.conn = conn
	go p.pump(conn)
	return p, nil
}

func (x *execEnv) deleteSession(sid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x.sb.Process.DeleteSession(ctx, sid)
}

// killTree kills every process of the command marked marker, in the
// sandbox, through the toolbox's execute route.
func (x *execEnv) killTree(ctx context.Context, marker string) error {
	req := toolbox.NewExecuteRequest(killScript(marker))
	req.SetTimeout(30)
	resp, hr, err := x.tb.ProcessAPI.ExecuteCommand(ctx).Request(*req).Execute()
	if hr != nil && hr.Body != nil {
		hr.Body.Close()
	}
	if err != nil {
		return x.gone(fmt.Errorf("daytona: kill the command's processes: %w", err))
	}
	if left := strings.TrimSpace(resp.GetResult()); left != "" {
		return fmt.Errorf("daytona: processes outlived the kill: %s", left)
	}
	return nil
}

// Run runs cmd to completion.
func (x *execEnv) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	begin := time.Now()
	p, err := x.start(ctx, cmd, cmd.Stdin != nil)
	if err != nil {
		return nil, err
	}
	if cmd.Stdin != nil {
		go func() { // ends with cmd.Stdin, or when the command has exited and input fails
			io.Copy(p.stdin, cmd.Stdin)
			p.stdin.Close()
		}()
	}
	out, errc := remote.NativeOutput(cmd)
	copied := make(chan struct{})
	copyOut := func() error {
		defer close(copied)
		var wg sync.WaitGroup
		wg.Go(func() { io.Copy(out, p.outR) })
		if cmd.SeparateStreams {
			wg.Go(func() { io.Copy(errc, p.errR) })
		}
		wg.Wait()
		return nil
	}
	var killErr error
	remote.AwaitNative(ctx, cmd.Timeout, copyOut, func(st envs.ExitStatus) {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		killErr = p.kill(kctx, st)
		cancel()
		select { // the stream ends with the killed processes; a stuck one is cut
		case <-copied:
		case <-time.After(30 * time.Second):
			p.abort()
		}
	})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	st, err := p.Wait(wctx)
	cancel()
	if err != nil {
		return nil, err
	}
	res := &envs.Result{ExitStatus: st, Duration: time.Since(begin)}
	if killErr != nil {
		res.Warnings = append(res.Warnings, killErr.Error())
	}
	res.TakeOutput(out, errc)
	return res, nil
}

// Start starts cmd; its stdin is relayed through the input route unless
// cmd.Stdin is given.
func (x *execEnv) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	p, err := x.start(ctx, cmd, true)
	if err != nil {
		return nil, err
	}
	if cmd.Stdin != nil {
		in := p.stdin
		p.stdin = nil
		go func() {
			io.Copy(in, cmd.Stdin)
			in.Close()
		}()
	}
	return p, nil
}

// Capabilities says what running through the toolbox gives.
func (x *execEnv) Capabilities() envs.Capabilities {
	return nativeCapabilities(x.s.opts)
}

// Capabilities is what a Daytona environment with o enforces, for reports
// made without creating a sandbox: the agent's guarantees, or with
// NoAgent the toolbox session path's weaker ones. An environment that had
// to fall back reports the latter from then on.
func Capabilities(o Options) envs.Capabilities {
	if o.NoAgent {
		return nativeCapabilities(o)
	}
	caps := remote.AgentCapabilities()
	addSandboxCaps(caps, o)
	return caps
}

// nativeCapabilities is what the toolbox session path enforces.
func nativeCapabilities(o Options) envs.Capabilities {
	caps := envs.Capabilities{
		envs.CapTreeKill:      {State: envs.Degraded, Detail: "every process carrying the command's marker variable is killed (TERM, then KILL) from inside the sandbox; one that clears its environment escapes"},
		envs.CapPTY:           {State: envs.Unsupported, Detail: "a toolbox session command has no terminal (the agent, when it runs, gives one)"},
		envs.CapStdin:         {State: envs.Degraded, Detail: "relayed in base64 lines through the toolbox's input route"},
		envs.CapSignals:       {State: envs.Unsupported, Detail: "the toolbox cannot signal a session command; Kill only"},
		envs.CapSessionState:  {State: envs.Unsupported, Detail: "each command runs in a toolbox session of its own: cd and export do not carry over"},
		envs.CapFileTransfer:  {State: envs.Active, Detail: "toolbox upload and download"},
		envs.CapDurableOutput: {State: envs.Degraded, Detail: "output is captured on this side; spill files are local"},
	}
	addSandboxCaps(caps, o)
	return caps
}

// Close kills every command still running.
func (x *execEnv) Close(ctx context.Context) error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	procs := make([]*proc, 0, len(x.procs))
	for p := range x.procs {
		procs = append(procs, p)
	}
	x.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.kill(ctx, envs.SignalStatus(syscall.SIGKILL)); err != nil && !errors.Is(err, remote.ErrGone) {
			errs = append(errs, err)
		}
	}
	x.cancel()
	return errors.Join(errs...)
}

func (x *execEnv) forget(p *proc) {
	x.mu.Lock()
	delete(x.procs, p)
	x.mu.Unlock()
}
