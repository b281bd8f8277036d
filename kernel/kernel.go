package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbox/runbox/envs"
)

// Defaults of [Options] fields left zero.
const (
	DefaultPython         = "python3"
	DefaultInterruptGrace = 3 * time.Second
	DefaultStartTimeout   = 2 * time.Minute // a hang guard: a loaded machine took over 30 s to start python3
)

// ErrNoInterpreter is returned when the environment has no such
// interpreter (the busybox image has no python3).
var ErrNoInterpreter = errors.New("kernel: interpreter not found in the environment")

// Options configure a [Kernel].
type Options struct {
	// Env is where the interpreter runs. Required. Its child environment
	// is built by the backend (spawn): the code sees no secrets.
	Env envs.Environment
	// Python is the interpreter's name or path inside Env. Empty means
	// [DefaultPython].
	Python string
	// Dir is the interpreter's working directory. Empty means Env's.
	Dir string
	// Tools are what the code can call through the runbox module. Nil
	// means none: runbox.terminal and friends raise runbox.ToolError.
	Tools Tools
	// OutputLimit bounds each of a cell's stdout and stderr in bytes.
	// Zero means [envs.DefaultOutputLimit]; negative means no bound.
	OutputLimit int
	// SpillDir is where a cell's whole output goes when it is cut. Empty
	// means [envs.DefaultSpillDir].
	SpillDir string
	// InterruptGrace is how long an interrupted cell has to stop before
	// the kernel is killed (losing its state). Zero means
	// [DefaultInterruptGrace].
	InterruptGrace time.Duration
	// StartTimeout bounds the interpreter's start. Zero means
	// [DefaultStartTimeout].
	StartTimeout time.Duration
	// MaxFrame bounds, in bytes, each protocol line the host reads from
	// the kernel: a longer one fails the running cell and kills the
	// kernel ([ErrFrameTooLarge] in the reply's notice), so host memory
	// stays bounded whatever the kernel writes. Zero means
	// [DefaultMaxFrame]; smaller values are raised to [MinMaxFrame].
	MaxFrame int
}

// ExecOptions tune one cell.
type ExecOptions struct {
	// Timeout interrupts the cell when it expires. Zero means no limit
	// beyond the context.
	Timeout time.Duration
}

// Kernel is a persistent Python interpreter running in an environment.
// The interpreter starts with the first cell (or [Kernel.Restart]) and is
// started again, with an empty namespace, after it is lost. One cell runs
// at a time; Execute waits for the previous one. Safe for concurrent use.
type Kernel struct {
	opts   Options
	sem    chan struct{} // held by the running Execute or Restart
	active atomic.Int64  // when a cell last started or ended (unix ns)

	mu     sync.Mutex
	proc   *proc
	lost   bool // a previous interpreter was lost: the next start is a restart
	closed bool
	nextID int64
}

// New returns a kernel over opts.Env. Nothing is started until the first
// cell.
func New(opts Options) (*Kernel, error) {
	if opts.Env == nil {
		return nil, errors.New("kernel: Options.Env is required")
	}
	o := opts
	if o.Python == "" {
		o.Python = DefaultPython
	}
	if o.InterruptGrace <= 0 {
		o.InterruptGrace = DefaultInterruptGrace
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.OutputLimit == 0 {
		o.OutputLimit = envs.DefaultOutputLimit
	}
	if o.MaxFrame == 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	o.MaxFrame = max(o.MaxFrame, MinMaxFrame)
	return &Kernel{opts: o, sem: make(chan struct{}, 1)}, nil
}

func (k *Kernel) acquire(ctx context.Context) error {
	select {
	case k.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kernel: waiting for the running cell: %w", ctx.Err())
	}
}

func (k *Kernel) release() { <-k.sem }

// ensure returns the live interpreter, starting one if there is none.
// restarted is true when it replaces one that was lost.
func (k *Kernel) ensure(ctx context.Context) (kp *proc, restarted bool, err error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, false, fmt.Errorf("kernel: %w", envs.ErrClosed)
	}
	old := k.proc
	if old != nil && !old.isDead() {
		k.mu.Unlock()
		return old, false, nil
	}
	k.proc = nil
	k.mu.Unlock()
	if old != nil {
		old.kill(context.WithoutCancel(ctx))
		k.mu.Lock()
		k.lost = true
		k.mu.Unlock()
	}
	kp, err = k.start(ctx)
	if err != nil {
		return nil, false, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		kp.kill(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("kernel: %w", envs.ErrClosed)
	}
	k.proc = kp
	restarted, k.lost = k.lost, false
	return kp, restarted, nil
}

// start starts the interpreter and waits for the driver's hello.
func (k *Kernel) start(ctx context.Context) (*proc, error) {
	cmd := envs.Command{
		Args:            []string{k.opts.Python, "-c", driverSource},
		Dir:             k.opts.Dir,
		Env:             map[string]string{"RUNBOX_KERNEL_TOOLS": k.opts.Tools.names(), "PYTHONIOENCODING": "utf-8"},
		SeparateStreams: true,
	}
	sctx, cancel := context.WithTimeout(ctx, k.opts.StartTimeout)
	defer cancel()
	kp, err := startProc(sctx, k.opts.Env, cmd, k.opts.Tools, k.opts.MaxFrame)
	if err != nil {
		if errors.Is(err, envs.ErrNotFound) {
			return nil, fmt.Errorf("kernel: %s: %w: %w", k.opts.Python, ErrNoInterpreter, err)
		}
		return nil, fmt.Errorf("kernel: start %s: %w", k.opts.Python, err)
	}
	select {
	case f := <-kp.ready:
		kp.pid = f.PID
		return kp, nil
	case <-kp.dead:
		st, ok := kp.exitCode(ctx)
		kp.kill(context.WithoutCancel(ctx))
		detail := strings.TrimSpace(kp.stderr.String())
		if ok && st.Code == envs.ExitNotFound {
			return nil, fmt.Errorf("kernel: %s (exit 127: %s): %w", k.opts.Python, detail, ErrNoInterpreter)
		}
		return nil, fmt.Errorf("kernel: %s exited before it was ready (exit %d): %s", k.opts.Python, st.Code, detail)
	case <-sctx.Done():
		kp.kill(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("kernel: %s did not start within %v: %s: %w", k.opts.Python, k.opts.StartTimeout, strings.TrimSpace(kp.stderr.String()), sctx.Err())
	}
}

// Start starts the interpreter now rather than with the first cell, so
// that a missing interpreter is reported at once.
func (k *Kernel) Start(ctx context.Context) error {
	if err := k.acquire(ctx); err != nil {
		return err
	}
	defer k.release()
	_, _, err := k.ensure(ctx)
	return err
}

// Execute runs code as one cell and returns its reply. A Python error is
// a reply with [StatusError], not an error; the error is for a kernel that
// cannot run the cell at all (no interpreter, closed kernel).
//
// When opts.Timeout expires or ctx is cancelled, the cell is interrupted
// (KeyboardInterrupt, delivered by the driver itself, so it needs no
// signal support from the environment) and the namespace survives; a
// cell interrupted before the interpreter began it does not run. A cell
// that does not stop within the grace period has its kernel killed, whole
// tree, and the reply says the state is lost.
func (k *Kernel) Execute(ctx context.Context, code string, opts ExecOptions) (*Reply, error) {
	if err := k.acquire(ctx); err != nil {
		return nil, err
	}
	defer k.release()
	k.touch()
	defer k.touch()
	kp, restarted, err := k.ensure(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.nextID++
	id := k.nextID
	k.mu.Unlock()
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &cell{
		id: id, done: make(chan frame, 1), ctx: cctx, cancel: cancel,
		stdout: envs.NewCapture(k.opts.OutputLimit, k.opts.SpillDir),
		stderr: envs.NewCapture(k.opts.OutputLimit, k.opts.SpillDir),
	}
	start := time.Now()
	kp.begin(c)
	reply := k.await(ctx, kp, c, code, opts)
	kp.finish(c)
	reply.Duration = time.Since(start)
	reply.Restarted = restarted
	if restarted && reply.Notice == "" {
		reply.Notice = "the kernel was restarted before this cell: variables from earlier cells are gone"
	}
	fill(reply, c)
	return reply, nil
}

// await sends the cell and waits for its end, interrupting and then
// killing it when its time is up.
func (k *Kernel) await(ctx context.Context, kp *proc, c *cell, code string, opts ExecOptions) *Reply {
	if err := kp.send(frame{Op: "exec", ID: c.id, Code: code}); err != nil {
		// Its stdin is gone: the stream ends with it, or the kill in
		// lostReply ends it.
		t := time.NewTimer(5 * time.Second)
		select {
		case <-kp.dead:
		case <-t.C:
		}
		t.Stop()
		return k.lostReply(ctx, kp, "the kernel went away before the cell could be sent")
	}
	var timeout <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	timedOut := false
	select {
	case f := <-c.done:
		return doneReply(f)
	case <-kp.dead:
		return k.lostReply(ctx, kp, "the kernel ended during the cell")
	case <-timeout:
		timedOut = true
	case <-ctx.Done():
	}
	// Interrupt, then give the cell its grace period.
	kp.send(frame{Op: "interrupt", ID: c.id})
	grace := time.NewTimer(k.opts.InterruptGrace)
	defer grace.Stop()
	var r *Reply
	select {
	case f := <-c.done:
		r = doneReply(f)
	case <-kp.dead:
		r = k.lostReply(ctx, kp, "the kernel exited while the cell was being interrupted")
	case <-grace.C:
		k.discard(kp)
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		kp.kill(kctx)
		cancel()
		r = &Reply{Status: StatusExit, StateLost: true,
			Notice: fmt.Sprintf("the cell did not stop within %v of the interrupt: the kernel and its processes were killed; the next cell starts in a fresh kernel", k.opts.InterruptGrace)}
	}
	r.Interrupted, r.TimedOut = true, timedOut
	return r
}

// discard forgets kp as the current interpreter, so the next cell starts
// a fresh one.
func (k *Kernel) discard(kp *proc) {
	k.mu.Lock()
	if k.proc == kp {
		k.proc = nil
		k.lost = true
	}
	k.mu.Unlock()
}

// lostReply is the reply of a cell whose interpreter ended under it, or
// broke the protocol (then it may still be running: it is killed at once,
// its word no longer trusted).
func (k *Kernel) lostReply(ctx context.Context, kp *proc, what string) *Reply {
	k.discard(kp)
	r := &Reply{Status: StatusExit, StateLost: true}
	if kp.violated() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		kp.kill(kctx)
		cancel()
		hint := ""
		if errors.Is(kp.readErr, ErrFrameTooLarge) {
			hint = " (Options.MaxFrame)"
		}
		r.Notice = fmt.Sprintf("%s: %v%s; the kernel and its processes were killed, its state is lost and the next cell starts in a fresh kernel", what, kp.readErr, hint)
		return r
	}
	st, ok := kp.exitCode(ctx)
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	kp.kill(kctx)
	cancel()
	if ok {
		code := st.Code
		r.ExitCode = &code
		what = fmt.Sprintf("%s (exit %d)", what, code)
	}
	if d := strings.TrimSpace(kp.stderr.String()); d != "" {
		what += ": " + lastLine(d)
	} else if kp.readErr != nil {
		what += ": " + kp.readErr.Error()
	}
	r.Notice = what + "; its state is lost and the next cell starts in a fresh kernel"
	return r
}

func doneReply(f frame) *Reply {
	r := &Reply{
		Status: f.Status, Result: f.Result, EName: f.EName, EValue: f.EValue, Traceback: f.Traceback,
		ExitCode: f.ExitCode, ExecutionCount: f.ExecutionCount, Interrupted: f.Interrupted,
	}
	if r.Status == "" {
		r.Status = StatusError
	}
	return r
}

// fill copies the cell's bounded output into r.
func fill(r *Reply, c *cell) {
	r.Stdout, r.Stderr = string(c.stdout.Bytes()), string(c.stderr.Bytes())
	r.StdoutSpillPath, r.StderrSpillPath = c.stdout.SpillPath(), c.stderr.SpillPath()
	r.Truncated = c.stdout.Truncated() || c.stderr.Truncated()
	c.stdout.Close()
	c.stderr.Close()
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Restart kills the interpreter (whole tree) and starts a fresh one with
// an empty namespace. It waits for a running cell to end first.
func (k *Kernel) Restart(ctx context.Context) error {
	if err := k.acquire(ctx); err != nil {
		return err
	}
	defer k.release()
	k.mu.Lock()
	old := k.proc
	k.proc = nil
	k.mu.Unlock()
	if old != nil {
		old.kill(context.WithoutCancel(ctx))
	}
	_, _, err := k.ensure(ctx)
	return err
}

// PID is the interpreter's process id in its environment (0 when none
// is running).
func (k *Kernel) PID() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc == nil {
		return 0
	}
	return k.proc.pid
}

// Close kills the interpreter's whole tree. A running cell ends with
// StateLost. Later calls fail with envs.ErrClosed.
func (k *Kernel) Close(ctx context.Context) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	kp := k.proc
	k.proc = nil
	k.mu.Unlock()
	if kp == nil {
		return nil
	}
	return kp.kill(ctx)
}

// Busy reports whether a cell (or a restart) is running.
func (k *Kernel) Busy() bool { return len(k.sem) > 0 }

func (k *Kernel) touch() { k.active.Store(time.Now().UnixNano()) }

// idleSince is when the kernel last started or ended a cell (zero if
// never).
func (k *Kernel) idleSince() time.Time {
	if n := k.active.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}
