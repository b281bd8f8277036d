package procregistry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/termination"
)

// Errors of the registry beyond the envs sentinels.
var (
	// ErrAmbiguous: a job id prefix matches more than one job.
	ErrAmbiguous = errors.New("procregistry: ambiguous job id")
	// ErrBusy: another live registry manages the state directory.
	ErrBusy = errors.New("procregistry: state directory in use")
)

// Environment is what the registry needs from a backend: a way to start
// a command. [envs.Environment] satisfies it; the registry starts only
// the job's supervisor through it (see package internal/supervisor),
// so the supervisor, and the job after it, get the child environment and
// working directory that the backend builds.
type Environment interface {
	Start(ctx context.Context, cmd envs.Command) (envs.Process, error)
}

// Defaults of [Options] fields left zero.
const (
	DefaultRetention    = 24 * time.Hour
	DefaultMaxFinished  = 200
	DefaultMinHeartbeat = 5 * time.Second
	DefaultPollInterval = 100 * time.Millisecond
	DefaultWatchWindow  = 10 * time.Second
	DefaultWatchPerJob  = 5
	DefaultWatchGlobal  = 20
	DefaultDisableAfter = 50
	// TailBytes bounds the output tail carried by events and previews.
	TailBytes = 2 << 10
	// maxLine bounds the bytes of one output line matched against watch
	// patterns; the rest of a longer line is skipped.
	maxLine = 4 << 10
)

// Options configures a [Registry]. Dir, Env and Supervisor are required.
type Options struct {
	// Dir is the state directory: one directory per job, the event log
	// and the consumers' cursors. It is created 0700. Open refuses it
	// ([ErrUnsafeStateDir]) when another user could change it or any
	// directory on the way to it (the rules of package statedir). One registry at
	// a time may use it (Open fails with [ErrBusy] otherwise); the lock is
	// a flock, so it dies with the process that held it.
	Dir string
	// Env starts each job's supervisor. Required.
	Env Environment
	// Supervisor is the argv prefix that runs the job supervisor's Main
	// (package internal/supervisor): for runbox, {"/path/to/runbox",
	// "__supervise"}. The registry appends a job directory to start a
	// job's supervision (through Env), or "-host" and Dir to start the
	// state directory's supervisor host (directly, with this process's
	// environment; see "How a job runs"). Required.
	Supervisor []string
	// SupervisorPerJob gives every job a supervisor process of its own,
	// as where no container can be made, instead of handing it to the
	// supervisor host. A job then costs its supervisor's memory (a few
	// MB) rather than a share of the host's.
	SupervisorPerJob bool
	// Clock is the source of time for heartbeats, watch rate limits, the
	// breaker and retention. Nil means the real clock.
	Clock Clock
	// Logger receives debug records. Nil discards them.
	Logger *slog.Logger
	// Grace is how long a kill waits after each SIGTERM round. Zero means
	// termination.DefaultGrace; negative means SIGKILL at once.
	Grace time.Duration
	// Retention is how long a finished job is kept. Zero means
	// DefaultRetention.
	Retention time.Duration
	// MaxFinished is how many finished jobs are kept at most (the oldest
	// go first). Zero means DefaultMaxFinished.
	MaxFinished int
	// MinHeartbeat is the floor of a job's heartbeat interval. Zero means
	// DefaultMinHeartbeat.
	MinHeartbeat time.Duration
	// PollInterval is how often a reader of a log it has read to the end
	// (a follower, [Registry.Follow]) looks for new output where it cannot
	// be woken by the write itself (no inotify); real time, since it is
	// about a file, not about the job's clock. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Watch bounds watch-match events.
	Watch WatchLimits
	// NoticeGap is the least time between two quiet events, or two
	// waiting-for-input events, of one job (a write to the job's stdin
	// lifts it for the next waiting-for-input event). Zero means
	// DefaultNoticeGap.
	NoticeGap time.Duration
}

// WatchLimits bound watch-match events. Zero fields take the defaults.
type WatchLimits struct {
	// Window is the length of a rate window. Zero means DefaultWatchWindow.
	Window time.Duration
	// PerJob is how many match events one job may send per window; later
	// matches in the window are counted and reported with the next event.
	// Zero means DefaultWatchPerJob.
	PerJob int
	// Global is how many match events all jobs together may send per
	// window. Beyond it the breaker trips (one event), every match is
	// dropped, and it releases (one event) when a window has passed.
	// Zero means DefaultWatchGlobal.
	Global int
	// DisableAfter is how many matches of one pattern, suppressed within
	// one window, switch that pattern off for the rest of the job (one
	// event says so). Zero means DefaultDisableAfter.
	DisableAfter int
}

// StartRequest describes a background job. Exactly one of Shell and
// Args is set.
type StartRequest struct {
	// Shell is a shell string, run with bash (or sh) -c. No session state
	// is shared with foreground commands.
	Shell string `json:"shell,omitempty"`
	// Args is an argv, looked up in PATH.
	Args []string `json:"args,omitempty"`
	// Dir is the working directory. Empty means the environment's.
	Dir string `json:"dir,omitempty"`
	// Env is laid over the environment's child environment. Only the
	// names are stored on disk.
	Env map[string]string `json:"env,omitempty"`
	// PTY, when non-nil, runs the command on a terminal of that size.
	PTY *envs.WindowSize `json:"pty,omitempty"`
	// Owner is the consumer that receives the job's events. Required.
	Owner string `json:"owner"`
	// Notify asks for a completion event to the owner.
	Notify bool `json:"notify,omitempty"`
	// Watch are Go regular expressions matched against each output line.
	Watch []string `json:"watch,omitempty"`
	// Heartbeat, when positive, sends a heartbeat event this often while
	// there is new output (raised to [Options].MinHeartbeat).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// Key makes the start idempotent per owner: a start with a key this
	// owner used before returns that job instead of a new one.
	Key string `json:"key,omitempty"`
	// Lifetime is the job's class (see [Lifetime]); it can be changed
	// while the job runs ([Registry.SetLifetime]).
	Lifetime Lifetime `json:"lifetime,omitempty"`
	// QuietAfter, when positive, sends one [EventQuiet] (with the output
	// tail) when the job has written nothing for this long; output
	// re-arms it. Zero means none. Values below [MinIdle] are raised.
	QuietAfter time.Duration `json:"quiet_after,omitempty"`
	// InputWait, when positive, sends one [EventWaitingForInput] (with
	// the output tail) when a process of the job has been blocked
	// reading the job's stdin (pipe or terminal), with no output and no
	// write to stdin, for this long; output, a write, or the wait ending
	// re-arms it. It is read from the processes' state in /proc, never
	// guessed from the output (see waitinput_linux.go for what is and is
	// not seen). Zero means none. Values below [MinIdle] are raised.
	InputWait time.Duration `json:"input_wait,omitempty"`
	// NoOutputTimeout, when positive, ends the job (a kill of its whole
	// tree, as [Registry.Kill]) once it has written nothing for this
	// long: its status is killed, KilledBy [KilledByNoOutput], and its
	// completion's reason [ReasonNoOutputTimeout]. Zero means none. It is
	// apart from any hard limit on the job's time. Values below
	// [MinIdle] are raised.
	NoOutputTimeout time.Duration `json:"no_output_timeout,omitempty"`
	// Limits, when non-nil and non-zero, bounds the job's whole tree
	// (memory, processes, CPU) through its container; a job whose limits
	// no container here can enforce fails to start. Nil means no limits:
	// the container then only holds the tree together.
	Limits *envs.Limits `json:"limits,omitempty"`
	// Display, when set, is what job.json, ps and events show in place of
	// the command: the client's copy of it with secret values replaced
	// (see internal/seal's Redact). The command itself is then kept only in
	// a private file in the job's directory, removed when the job ends,
	// and reaches the job's shell through that file, never its argv.
	// Empty means the command is shown as given.
	Display string `json:"display,omitempty"`
	// Confine, when set and not off, is the sandbox the job's command
	// runs under (see package confine): the supervisor starts the
	// resolved program through the trampoline Confiner, with the job's
	// own command file and log made reachable to it.
	Confine  *confine.Policy `json:"confine,omitempty"`
	Confiner []string        `json:"confiner,omitempty"`
	// Redacted names the variables whose values Display replaced.
	Redacted []string `json:"redacted,omitempty"`
}

// Registry is a set of background jobs kept in a state directory. It is
// safe for concurrent use.
type Registry struct {
	opts  Options
	clock Clock
	log   *slog.Logger
	lock  *os.File

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the registry started

	// lw wakes readers of logs on writes; nil where inotify is not
	// available (they look again every PollInterval then).
	lw *logWatcher

	// hostMu makes one Start at a time look for the supervisor host and
	// start it.
	hostMu sync.Mutex

	mu     sync.Mutex
	closed bool
	jobs   map[string]*job
	keys   map[string]string // owner NUL key -> id
	claims map[string]string // claimed owner -> its token's hash (owners.go)
	ev     *eventLog
	limits watchLimiter
}

// job is the registry's view of one job. Fields are guarded by
// Registry.mu unless said otherwise.
type job struct {
	id, dir string
	rec     record
	status  Status
	pids    *pidRecord
	exit    *exitRecord
	fail    *failRecord
	kill    *killRecord
	lost    string
	ended   time.Time
	// orphaned: the supervisor died while the job ran; the registry
	// follows the job's processes itself (see orphan.go).
	orphaned bool

	started  chan struct{} // closed once the start settled
	exitSeen chan struct{} // closed once the exit (or loss) is known
	done     chan struct{} // closed once the job is finished and reported

	watch   *jobWatch     // nil without patterns
	drained chan struct{} // closed when the follower has read to the end; nil without one
	hbLast  int64         // log size at the last heartbeat (heartbeat goroutine only)
	wrote   chan struct{} // a token per stdin write, for the idle loop; nil without one
}

func (j *job) logPath() string { return filepath.Join(j.dir, fileLog) }

// Open opens (creating if needed) the registry in opts.Dir and recovers
// every job recorded there: running jobs are followed again, jobs that
// ended meanwhile are completed, and jobs whose process can no longer be
// vouched for are reported lost.
func Open(opts Options) (*Registry, error) {
	o := opts
	switch {
	case o.Dir == "":
		return nil, errors.New("procregistry: Options.Dir is required")
	case o.Env == nil:
		return nil, errors.New("procregistry: Options.Env is required")
	case len(o.Supervisor) == 0:
		return nil, errors.New("procregistry: Options.Supervisor is required")
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Grace == 0 {
		o.Grace = termination.DefaultGrace
	} else if o.Grace < 0 {
		o.Grace = 0
	}
	o.Retention = cmpOr(o.Retention, DefaultRetention)
	o.MaxFinished = cmpOr(o.MaxFinished, DefaultMaxFinished)
	o.MinHeartbeat = cmpOr(o.MinHeartbeat, DefaultMinHeartbeat)
	o.PollInterval = cmpOr(o.PollInterval, DefaultPollInterval)
	o.Watch.Window = cmpOr(o.Watch.Window, DefaultWatchWindow)
	o.Watch.PerJob = cmpOr(o.Watch.PerJob, DefaultWatchPerJob)
	o.Watch.Global = cmpOr(o.Watch.Global, DefaultWatchGlobal)
	o.Watch.DisableAfter = cmpOr(o.Watch.DisableAfter, DefaultDisableAfter)
	o.NoticeGap = cmpOr(o.NoticeGap, DefaultNoticeGap)
	o.Supervisor = slices.Clone(o.Supervisor)

	dir, err := prepareStateDir(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	for _, d := range []string{filepath.Join(dir, "jobs"), filepath.Join(dir, "cursors"), filepath.Join(dir, jobdir.HostDir)} {
		if err := mkdirPrivate(dir, d); err != nil {
			return nil, err
		}
	}
	lock, err := openPrivateFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("procregistry: %s: %w", dir, ErrBusy)
	}
	ev, err := openEventLog(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	r := &Registry{
		opts: o, clock: o.Clock, log: o.Logger, lock: lock,
		jobs: map[string]*job{}, keys: map[string]string{}, ev: ev,
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if lw, err := newLogWatcher(); err == nil {
		r.lw = lw
	} else {
		r.log.Warn("procregistry: log readers will poll", "err", err)
	}
	r.limits.init(r.clock.Now())
	if err := r.recover(); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.loadClaims(); err != nil {
		r.Close()
		return nil, err
	}
	r.wg.Add(1)
	go r.sweeper()
	return r, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Close stops every goroutine of the registry (followers, heartbeats,
// monitors, the sweeper) and waits for them. It does not stop any job:
// they run on, and a registry opened later on the same directory picks
// them up.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	if r.lw != nil {
		r.lw.close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.ev.close()
	r.lock.Close()
	return err
}

// goJob starts f as a registry goroutine, unless the registry is closed.
// r.mu must be held.
func (r *Registry) goLocked(f func()) {
	if r.closed {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts a background job and returns once it runs (or failed to
// start, which is reported in the Info and a completion event, not as an
// error). ctx bounds only the start. The error is for a bad request or a
// closed registry.
func (r *Registry) Start(ctx context.Context, req StartRequest) (Info, error) {
	return r.start(ctx, req, "")
}

// start is Start for a caller whose confinement the server found:
// confinedCaller is record.ConfinedCaller.
func (r *Registry) start(ctx context.Context, req StartRequest, confinedCaller string) (Info, error) {
	c := envs.Command{Shell: req.Shell, Args: req.Args}
	if err := c.Validate(); err != nil {
		return Info{}, fmt.Errorf("procregistry: start: %w", err)
	}
	if req.Owner == "" {
		return Info{}, fmt.Errorf("procregistry: start: %w: no owner", envs.ErrBadCommand)
	}
	lt, err := ParseLifetime(string(req.Lifetime))
	if err != nil {
		return Info{}, fmt.Errorf("procregistry: start: %w", err)
	}
	req.Lifetime = lt
	var pats []*regexp.Regexp
	for _, p := range req.Watch {
		re, err := regexp.Compile(p)
		if err != nil {
			return Info{}, fmt.Errorf("procregistry: start: %w: watch pattern: %w", envs.ErrBadCommand, err)
		}
		pats = append(pats, re)
	}
	hb := req.Heartbeat
	if hb > 0 && hb < r.opts.MinHeartbeat {
		hb = r.opts.MinHeartbeat
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("procregistry: start: %w", envs.ErrClosed)
	}
	keyID := ""
	if req.Key != "" {
		keyID = req.Owner + "\x00" + req.Key
		if id, ok := r.keys[keyID]; ok {
			j := r.jobs[id]
			r.mu.Unlock()
			if j == nil {
				return Info{}, fmt.Errorf("procregistry: start: key %q: job %s: %w", req.Key, id, envs.ErrNotFound)
			}
			select {
			case <-j.started:
			case <-ctx.Done():
				return Info{}, fmt.Errorf("procregistry: start: %w", ctx.Err())
			}
			return r.info(j), nil
		}
	}
	id := newID()
	j := &job{
		id: id, dir: filepath.Join(r.opts.Dir, "jobs", id), status: StatusStarting,
		started: make(chan struct{}), exitSeen: make(chan struct{}), done: make(chan struct{}),
		rec: record{
			Spec: jobdir.Spec{
				ID: id, Shell: req.Shell, Args: slices.Clone(req.Args),
				Display: req.Display, PTY: req.PTY,
				Confine: req.Confine, Confiner: slices.Clone(req.Confiner),
				Grace: r.opts.Grace,
			},
			Owner: req.Owner, Dir: req.Dir, Redacted: slices.Clone(req.Redacted),
			Notify: req.Notify, Watch: slices.Clone(req.Watch), Heartbeat: hb,
			Key: req.Key, Lifetime: req.Lifetime, Created: r.clock.Now(),
			QuietAfter: floorIdle(req.QuietAfter), InputWait: floorIdle(req.InputWait),
			NoOutputTimeout: floorIdle(req.NoOutputTimeout),
			ConfinedCaller:  confinedCaller,
		},
	}
	if !req.Limits.IsZero() {
		l := *req.Limits
		j.rec.Limits = &l
	}
	for k := range req.Env {
		j.rec.EnvNames = append(j.rec.EnvNames, k)
	}
	slices.Sort(j.rec.EnvNames)
	if len(pats) > 0 {
		j.watch = newJobWatch(pats)
	}
	r.jobs[id] = j
	if keyID != "" {
		r.keys[keyID] = id
	}
	r.mu.Unlock()

	if err := r.create(j); err != nil {
		r.mu.Lock()
		delete(r.jobs, id)
		if keyID != "" {
			delete(r.keys, keyID)
		}
		close(j.started)
		r.mu.Unlock()
		if !errors.Is(err, fs.ErrExist) { // never a directory it did not make
			os.RemoveAll(j.dir)
		}
		return Info{}, err
	}
	r.launch(ctx, j, req)
	return r.info(j), nil
}

// create makes the job's directory, record and empty log.
func (r *Registry) create(j *job) error {
	if err := os.Mkdir(j.dir, 0o700); err != nil {
		return fmt.Errorf("procregistry: start: %w", err)
	}
	if err := checkPrivateDir(r.opts.Dir, j.dir); err != nil {
		return fmt.Errorf("procregistry: start: %w", err)
	}
	if err := writeRecord(j.dir, &j.rec); err != nil {
		return err
	}
	f, err := openPrivateFile(j.logPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("procregistry: start: %w", err)
	}
	return f.Close()
}

// launch runs the supervisor's first stage through the environment and
// settles the job as running or failed.
func (r *Registry) launch(ctx context.Context, j *job, req StartRequest) {
	defer close(j.started)
	argv := slices.Clone(r.opts.Supervisor)
	if r.opts.SupervisorPerJob {
		argv = append(argv, "-own")
	} else {
		r.ensureHost(ctx)
	}
	argv = append(argv, j.dir)
	p, err := r.opts.Env.Start(ctx, envs.Command{Args: argv, Dir: req.Dir, Env: req.Env})
	var why string
	if err != nil {
		why = err.Error()
	} else {
		if in := p.Stdin(); in != nil {
			in.Close()
		}
		var out []byte
		if o := p.Output(); o != nil {
			out, _ = io.ReadAll(io.LimitReader(o, 64<<10))
			io.Copy(io.Discard, o)
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		st, werr := p.Wait(wctx)
		cancel()
		switch {
		case werr != nil:
			why = werr.Error()
		case st.Code != 0:
			why = strings.TrimSpace(string(out))
			if why == "" {
				why = fmt.Sprintf("supervisor exited with status %d", st.Code)
			}
			if st.Code == envs.ExitCannotEnter && req.Dir != "" {
				why = fmt.Sprintf("cannot enter %s: %s", req.Dir, why)
			}
		}
	}
	var pr pidRecord
	var fr failRecord
	hasFail, _ := readJSON(filepath.Join(j.dir, fileStartFail), &fr)
	hasPID, _ := readJSON(filepath.Join(j.dir, filePID), &pr)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case hasFail:
		j.fail = &fr
	case hasPID && why == "":
		j.pids = &pr
		j.status = StatusRunning
		r.follow(j, 0)
		return
	default:
		if why == "" {
			why = "supervisor did not report"
		}
		j.fail = &failRecord{Error: why, Status: envs.ExitStatus{Code: envs.ExitCannotEnter}, Time: r.clock.Now()}
		writeJSON(filepath.Join(j.dir, fileStartFail), j.fail)
	}
	j.status = StatusFailed
	close(j.exitSeen)
	r.finishLocked(j)
}

// follow starts the goroutines of a running job: its monitor, and its
// follower and heartbeat when asked for. from is where the follower
// starts reading. r.mu must be held.
func (r *Registry) follow(j *job, from int64) {
	if j.watch != nil {
		j.drained = make(chan struct{})
		r.goLocked(func() { r.watchLoop(j, from) })
	}
	if j.rec.Heartbeat > 0 {
		j.hbLast = from
		r.goLocked(func() { r.heartbeatLoop(j) })
	}
	if j.rec.wantsIdle() {
		j.wrote = make(chan struct{}, 1)
		r.goLocked(func() { r.idleLoop(j, from) })
	}
	r.goLocked(func() { r.monitor(j) })
}

// resolve finds a job by id or unique id prefix. r.mu must be held.
func (r *Registry) resolveLocked(id string) (*job, error) {
	if j, ok := r.jobs[id]; ok {
		return j, nil
	}
	var found []*job
	if id != "" {
		for k, j := range r.jobs {
			if strings.HasPrefix(k, id) {
				found = append(found, j)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("procregistry: job %q: %w", id, envs.ErrNotFound)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, j := range found {
		ids[i] = j.id
	}
	slices.Sort(ids)
	return nil, fmt.Errorf("%w: %q matches %s", ErrAmbiguous, id, strings.Join(ids, ", "))
}

func (r *Registry) resolve(id string) (*job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolveLocked(id)
}

// Get returns the job named by id (or a unique prefix of it).
func (r *Registry) Get(id string) (Info, error) {
	j, err := r.resolve(id)
	if err != nil {
		return Info{}, err
	}
	return r.info(j), nil
}

// List returns the jobs of owner ("" for every owner), oldest first.
func (r *Registry) List(owner string) []Info {
	r.mu.Lock()
	js := make([]*job, 0, len(r.jobs))
	for _, j := range r.jobs {
		if owner == "" || j.rec.Owner == owner {
			js = append(js, j)
		}
	}
	r.mu.Unlock()
	out := make([]Info, len(js))
	for i, j := range js {
		out[i] = r.info(j)
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func (r *Registry) info(j *job) Info {
	var size int64
	if fi, err := os.Lstat(j.logPath()); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	in := Info{
		ID: j.id, Owner: j.rec.Owner, Command: j.rec.command(), Dir: j.rec.Dir, PTY: j.rec.PTY != nil,
		Key: j.rec.Key, Lifetime: j.rec.Lifetime, Notify: j.rec.Notify, Watch: j.rec.Watch,
		Heartbeat: j.rec.Heartbeat, Status: j.status, Created: j.rec.Created, Ended: j.ended,
		Size: size, Notes: slices.Clone(j.rec.Notes),
		QuietAfter: j.rec.QuietAfter, InputWait: j.rec.InputWait, NoOutputTimeout: j.rec.NoOutputTimeout,
	}
	if j.pids != nil {
		in.PID, in.Started = j.pids.Command.PID, j.pids.Started
		in.SupervisorPID = j.pids.Supervisor.PID
		in.Warning = j.pids.Warning
		if c := j.pids.Container; c != nil && c.Mechanism != termination.ProcessGroup {
			in.Containment = c.Mechanism.String()
		}
	}
	if j.exit != nil && j.status != StatusLost {
		st := j.exit.Status
		in.Exit = &st
		in.Warning = joinWarning(in.Warning, j.exit.Note)
		in.SandboxViolations = slices.Clone(j.exit.Violations)
	}
	if j.orphaned && !j.status.Finished() {
		in.Warning = joinWarning(in.Warning, warnOrphan)
	}
	if j.status == StatusKilled && j.kill != nil {
		in.KilledBy = j.kill.By
	}
	switch {
	case j.fail != nil:
		in.Error = j.fail.Error
		st := j.fail.Status
		in.Exit = &st
	case j.status == StatusLost:
		in.Error = j.lost
	}
	return in
}

// joinWarning appends w to a warning.
func joinWarning(warning, w string) string {
	switch {
	case w == "":
		return warning
	case warning == "":
		return w
	}
	return warning + "; " + w
}

// Handoff moves the job to owner, with a note for the record. The new
// owner receives a handoff event now and the completion later (the job
// is switched to notify).
func (r *Registry) Handoff(id, owner, note string) (Info, error) {
	if owner == "" {
		return Info{}, fmt.Errorf("procregistry: handoff: %w: no owner", envs.ErrBadCommand)
	}
	r.mu.Lock()
	j, err := r.resolveLocked(id)
	if err != nil {
		r.mu.Unlock()
		return Info{}, err
	}
	from := j.rec.Owner
	j.rec.Owner = owner
	j.rec.Notify = true
	j.rec.Notes = append(j.rec.Notes, Note{From: from, To: owner, Note: note, Time: r.clock.Now()})
	err = writeJSON(filepath.Join(j.dir, fileJob), &j.rec)
	if err == nil {
		err = r.ev.append(&Event{Type: EventHandoff, Consumer: owner, Job: j.id, Time: r.clock.Now(),
			Message: fmt.Sprintf("job %s handed over by %s: %s", j.id, from, note)})
	}
	r.mu.Unlock()
	if err != nil {
		return Info{}, err
	}
	return r.info(j), nil
}

// SetLifetime changes the job's class while it runs: a session's job
// made detached outlives the session, a detached one made a session's
// ends with it. A finished job's class is kept as it was.
func (r *Registry) SetLifetime(id string, l Lifetime) (Info, error) {
	l, err := ParseLifetime(string(l))
	if err != nil {
		return Info{}, fmt.Errorf("procregistry: set lifetime: %w", err)
	}
	r.mu.Lock()
	j, err := r.resolveLocked(id)
	if err != nil {
		r.mu.Unlock()
		return Info{}, err
	}
	if j.status.Finished() {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("procregistry: set lifetime of job %s: %w: it has finished (%s)", j.id, envs.ErrBadCommand, j.status)
	}
	j.rec.Lifetime = l
	err = writeJSON(filepath.Join(j.dir, fileJob), &j.rec)
	r.mu.Unlock()
	if err != nil {
		return Info{}, fmt.Errorf("procregistry: set lifetime of job %s: %w", j.id, err)
	}
	return r.info(j), nil
}

// Wait waits until the job finishes, timeout passes (zero: no limit) or
// ctx ends. A timeout is not an error: done is false and the job runs on.
func (r *Registry) Wait(ctx context.Context, id string, timeout time.Duration) (info Info, done bool, err error) {
	j, err := r.resolve(id)
	if err != nil {
		return Info{}, false, err
	}
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-j.done:
		return r.info(j), true, nil
	case <-tc:
		return r.info(j), false, nil
	case <-ctx.Done():
		return r.info(j), false, fmt.Errorf("procregistry: wait %s: %w", j.id, ctx.Err())
	case <-r.ctx.Done():
		return r.info(j), false, fmt.Errorf("procregistry: wait %s: %w", j.id, envs.ErrClosed)
	}
}

// Write writes data to the job's stdin (its terminal in PTY mode).
func (r *Registry) Write(ctx context.Context, id string, data []byte) error {
	return r.ctl(ctx, id, ctlRequest{Op: opWrite, Data: data})
}

// Submit writes text and a line end: "\n" on pipes, "\r" on a terminal
// (what the Enter key sends).
func (r *Registry) Submit(ctx context.Context, id, text string) error {
	j, err := r.resolve(id)
	if err != nil {
		return err
	}
	end := "\n"
	if j.rec.PTY != nil {
		end = "\r"
	}
	return r.ctl(ctx, j.id, ctlRequest{Op: opWrite, Data: []byte(text + end)})
}

// CloseStdin sends end-of-file: it closes the stdin pipe, or types the
// EOF character (^D) on a terminal.
func (r *Registry) CloseStdin(ctx context.Context, id string) error {
	return r.ctl(ctx, id, ctlRequest{Op: opClose})
}

// Resize changes a PTY job's terminal size.
func (r *Registry) Resize(ctx context.Context, id string, size envs.WindowSize) error {
	return r.ctl(ctx, id, ctlRequest{Op: opResize, Rows: size.Rows, Cols: size.Cols})
}

func (r *Registry) ctl(ctx context.Context, id string, req ctlRequest) error {
	j, err := r.resolve(id)
	if err != nil {
		return err
	}
	<-j.started
	r.mu.Lock()
	st, orphaned := j.status, j.orphaned
	r.mu.Unlock()
	if st != StatusRunning {
		return fmt.Errorf("procregistry: %s %s: job is %s: %w", req.Op, j.id, st, envs.ErrClosed)
	}
	if orphaned {
		return fmt.Errorf("procregistry: %s %s: its supervisor died, and stdin with it: %w", req.Op, j.id, envs.ErrClosed)
	}
	resp, err := ctlCall(ctx, j.dir, req)
	if err != nil {
		return fmt.Errorf("procregistry: %s %s: %w", req.Op, j.id, err)
	}
	if resp.Error != "" {
		return fmt.Errorf("procregistry: %s %s: %s: %w", req.Op, j.id, resp.Error, envs.ErrClosed)
	}
	if req.Op == opWrite || req.Op == opClose {
		r.mu.Lock()
		j.noteWrite()
		r.mu.Unlock()
	}
	return nil
}

// EndSession kills every running job of owner whose lifetime is the
// session. Detached jobs are left alone.
func (r *Registry) EndSession(ctx context.Context, owner string) ([]KillResult, error) {
	r.mu.Lock()
	var ids []string
	for _, j := range r.jobs {
		if j.rec.Owner == owner && j.rec.Lifetime.EndsWithSession() && !j.status.Finished() {
			ids = append(ids, j.id)
		}
	}
	r.mu.Unlock()
	slices.Sort(ids)
	var res []KillResult
	var errs []error
	for _, id := range ids {
		kr, err := r.kill(ctx, id, "session-end")
		res = append(res, kr)
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}
