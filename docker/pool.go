package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/envs"
)

// LabelPool marks the containers a [Pool] made, with the pool's id as its
// value. The label stays on a container after it is handed out.
const LabelPool = "io.runbox.pool"

// DefaultPoolSpecs is how many different specs a [Pool] keeps warm when
// PoolOptions.MaxSpecs is zero.
const DefaultPoolSpecs = 4

// orphanAge is how old a pooled container with no agent running in it
// must be before [NewPool] takes it for the leftover of a pool whose
// process died (younger ones may be a live pool's, not yet attached).
const orphanAge = time.Minute

// pingTimeout bounds the check of a pooled environment before it is
// handed out.
const pingTimeout = 2 * time.Second

// PoolOptions configures a [Pool].
type PoolOptions struct {
	// Size is how many idle containers, agent attached, are kept ready for
	// each spec. Required: a pool of zero is no pool.
	Size int
	// MaxSpecs bounds how many different specs are kept warm at once; the
	// one used least recently is drained when another is needed. Zero
	// means DefaultPoolSpecs.
	MaxSpecs int
	// Task is the task label (io.runbox.task) of the containers the pool
	// makes, which are made before anyone asks for them. Empty means
	// "pool".
	Task string
	// Client is the engine client. Nil means one from the environment,
	// closed by Close.
	Client *client.Client
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}

// Pool keeps ready containers, so that [Pool.New] hands one out at the
// cost of a ping instead of a create, a start and an agent attach. It only
// helps a process that lives across many environments (the MCP server, a
// Go program, the bench); every idle container costs what a running
// container costs while it waits.
//
// A spec is kept warm from the first New (or [Pool.Warm]) that asks for
// it. A pooled environment is what New would have made for the same
// Options — same image, directory, limits, network, mounts, agent — and
// fresh: nothing ran in it but the agent's handshake. Only its labels
// differ: io.runbox.task is PoolOptions.Task and io.runbox.pool the pool's
// id, since labels are fixed when a container is made. Options.Env is not
// part of the spec (it travels with each command), so it is the caller's.
// Persistent or agent-less Options, and any spec not warm yet, get a
// container made on the spot, as [New] makes it.
//
// The handed-out container is replaced in the background. Closing an
// environment the pool handed out removes its container in the
// background too; [Pool.Close] stops the pool's goroutines, removes its
// idle containers and waits for those removals. A crashed pool's
// containers are removed by the next NewPool on the same engine (any
// labelled io.runbox.pool with no agent running in it, older than a
// minute). It is safe for concurrent use.
type Pool struct {
	opts   PoolOptions
	id     string
	cli    *client.Client
	ownCli bool
	log    *slog.Logger
	ctx    context.Context // ends at Close: stops the fillers
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // fillers and background removals; Add only under mu, before closed
	specs  map[string]*poolSpec
	out    map[string]bool // ids of pooled containers handed out and not yet removed
}

// poolSpec is one spec kept warm.
type poolSpec struct {
	key    string
	opts   Options // what its containers are made with (the pool's labels, no Env)
	idle   []*Env
	used   time.Time
	wake   chan struct{} // nudges the filler; capacity 1
	cancel context.CancelFunc
	broken string // why this spec cannot be pooled (the agent does not run in it)
}

// NewPool makes a pool and removes what crashed pools left on the engine
// (see [Pool]). ctx bounds that sweep only.
func NewPool(ctx context.Context, opts PoolOptions) (*Pool, error) {
	if opts.Size <= 0 {
		return nil, fmt.Errorf("docker: pool size %d: must be positive: %w", opts.Size, envs.ErrBadCommand)
	}
	o := opts
	if o.MaxSpecs <= 0 {
		o.MaxSpecs = DefaultPoolSpecs
	}
	if o.Task == "" {
		o.Task = "pool"
	}
	p := &Pool{opts: o, id: randomID(), cli: o.Client, log: o.Logger, specs: map[string]*poolSpec{}, out: map[string]bool{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.cli == nil {
		cli, err := NewClient()
		if err != nil {
			return nil, err
		}
		p.cli, p.ownCli = cli, true
	}
	if n, err := sweepPools(ctx, p.cli, orphanAge, ""); err != nil {
		p.log.Debug("docker: pool: sweep", "err", err)
	} else if n > 0 {
		p.log.Debug("docker: pool: removed containers of dead pools", "n", n)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// ID is the value of the io.runbox.pool label on this pool's containers.
func (p *Pool) ID() string { return p.id }

// poolable says whether o can be served from a pool.
func poolable(o Options) bool { return !o.Persistent && !o.NoAgent }

// specKey names what makes two Options' containers the same: everything
// that goes into the container, its agent and its fallback, and nothing
// that only travels with commands (Env) or only concerns the caller
// (Task, Logger, Progress, Client, timeouts).
func specKey(o Options) string {
	b, err := json.Marshal(struct {
		Image, Owner, Dir, Network, Workspace string
		Spawn                                 any
		Limits                                envs.Limits
		PidsLimit                             int64
		ReadOnlyRoot, NoAgent                 bool
		Mounts                                []Mount
		AgentBinary, CLIBinary, SourceDir     string
	}{o.Image, o.Owner, o.Dir, o.Network, o.Workspace, o.Spawn, o.Limits, o.PidsLimit, o.ReadOnlyRoot, o.NoAgent, o.Mounts, o.AgentBinary, o.CLIBinary, o.SourceDir})
	if err != nil {
		return "unmatched-" + randomID() // never the same as another: no pooling rather than a wrong match
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Warm starts keeping Size containers ready for opts' spec, without
// waiting for them (Idle tells how many are ready).
func (p *Pool) Warm(opts Options) error {
	o, err := checkOptions(opts)
	if err != nil {
		return err
	}
	if !poolable(o) {
		return fmt.Errorf("docker: pool: persistent or agent-less environments are not pooled: %w", envs.ErrBadCommand)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("docker: pool: %w", envs.ErrClosed)
	}
	p.specLocked(o)
	return nil
}

// Idle is how many containers are ready for opts' spec.
func (p *Pool) Idle(opts Options) int {
	o, err := checkOptions(opts)
	if err != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if sp := p.specs[specKey(o)]; sp != nil {
		return len(sp.idle)
	}
	return 0
}

// New returns an environment for opts: a ready one from the pool when it
// has one for opts' spec (checked alive first: one whose container or
// agent died is dropped), else one made as [New] makes it. Either way the
// spec is kept warm from then on.
func (p *Pool) New(ctx context.Context, opts Options) (*Env, error) {
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	if !poolable(o) {
		return open(ctx, o, nil)
	}
	for {
		e := p.take(o)
		if e == nil {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := e.host.Ping(pctx)
		cancel()
		if err == nil {
			p.adopt(e, o)
			return e, nil
		}
		if ctx.Err() != nil {
			p.drop(e)
			return nil, ctx.Err()
		}
		p.log.Debug("docker: pool: dropping a dead container", "container", short(e.ContainerID()), "err", err)
		p.drop(e)
	}
	return open(ctx, o, nil)
}

// take pops a ready environment of o's spec (nil when there is none), and
// wakes the spec's filler to replace it.
func (p *Pool) take(o Options) *Env {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	sp := p.specLocked(o)
	sp.used = time.Now()
	defer sp.nudge()
	if len(sp.idle) == 0 {
		return nil
	}
	e := sp.idle[0]
	sp.idle = sp.idle[1:]
	p.out[e.ContainerID()] = true
	return e
}

// adopt makes a pooled environment the caller's: its Options (Env,
// Task, Logger, StopTimeout; the spec is the same), and, should the
// container have to be recreated, the caller's labels.
func (p *Pool) adopt(e *Env, o Options) {
	o.Client = p.cli
	e.opts = o
	e.sb.mu.Lock()
	e.sb.opts = o
	e.sb.labels = labels(o)
	e.sb.mu.Unlock()
}

// specLocked returns o's spec, starting to keep it warm when it is new
// and draining the least recently used one beyond MaxSpecs.
func (p *Pool) specLocked(o Options) *poolSpec {
	key := specKey(o)
	if sp := p.specs[key]; sp != nil {
		return sp
	}
	if len(p.specs) >= p.opts.MaxSpecs {
		var lru *poolSpec
		for _, sp := range p.specs {
			if lru == nil || sp.used.Before(lru.used) {
				lru = sp
			}
		}
		p.retireLocked(lru)
	}
	t := o
	t.Task, t.Env, t.Logger, t.Progress, t.Client = p.opts.Task, nil, p.log, nil, p.cli
	t.ReapAge = -1 // the pool is no reason to reap on every container
	ctx, cancel := context.WithCancel(p.ctx)
	sp := &poolSpec{key: key, opts: t, used: time.Now(), wake: make(chan struct{}, 1), cancel: cancel}
	p.specs[key] = sp
	p.wg.Add(1)
	go p.fill(ctx, sp)
	return sp
}

// retireLocked stops keeping sp warm and removes its idle containers.
func (p *Pool) retireLocked(sp *poolSpec) {
	sp.cancel()
	delete(p.specs, sp.key)
	for _, e := range sp.idle {
		p.removeLocked(e)
	}
	sp.idle = nil
}

func (sp *poolSpec) nudge() {
	select {
	case sp.wake <- struct{}{}:
	default:
	}
}

// fill keeps Size containers ready for sp until ctx ends (the spec is
// retired or the pool closed). Containers are made one at a time; a
// failure is retried with a growing pause.
func (p *Pool) fill(ctx context.Context, sp *poolSpec) {
	defer p.wg.Done()
	pause := time.Second
	for {
		p.mu.Lock()
		need := len(sp.idle) < p.opts.Size && sp.broken == ""
		p.mu.Unlock()
		if !need {
			select {
			case <-ctx.Done():
				return
			case <-sp.wake:
				continue
			}
		}
		e, err := open(ctx, sp.opts, map[string]string{LabelPool: p.id})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Debug("docker: pool: make a container", "image", sp.opts.Image, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 30*time.Second)
			continue
		}
		pause = time.Second
		e.sb.release = p.release // set before anyone else sees e
		p.mu.Lock()
		switch {
		case ctx.Err() != nil || p.closed:
			p.removeLocked(e)
			p.mu.Unlock()
			return
		case e.Fallback() != "":
			// Pooling a degraded environment would hide nothing but
			// keep a container idle for it: the spec goes cold.
			sp.broken = e.Fallback()
			p.removeLocked(e)
			p.log.Debug("docker: pool: the agent does not run in this spec; not pooled", "image", sp.opts.Image, "why", sp.broken)
		default:
			sp.idle = append(sp.idle, e)
		}
		p.mu.Unlock()
	}
}

// drop removes an environment taken from the pool that is not handed out.
func (p *Pool) drop(e *Env) {
	p.mu.Lock()
	if !p.closed {
		p.removeLocked(e)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	e.host.Close(context.Background()) // the pool is closed: its container goes now
}

// removeLocked closes pooled e in the background; its container is then
// removed (see release).
func (p *Pool) removeLocked(e *Env) {
	p.wg.Add(1)
	go func() { // owned by the pool: Close waits for it
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.host.Close(ctx); err != nil {
			p.log.Debug("docker: pool: close", "err", err)
		}
	}()
}

// release removes container id in the background for an environment the
// pool handed out, and reports whether it took the job; a closed pool
// does not, and the caller removes it itself.
func (p *Pool) release(ctx context.Context, s *sandbox, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() { // owned by the pool: Close waits for it
		defer p.wg.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := s.forceRemove(rctx, id); err != nil {
			p.log.Debug("docker: pool: remove", "container", short(id), "err", err)
		}
		p.mu.Lock()
		delete(p.out, id)
		p.mu.Unlock()
	}()
	return true
}

// Close stops keeping containers ready, removes the idle ones and waits
// for the removals of containers it handed out and whose environments
// were closed. Environments it handed out and still open stay the
// caller's (their Close removes their container then). ctx bounds the
// wait.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	for _, sp := range p.specs {
		p.retireLocked(sp)
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }() // ends when the pool's goroutines do
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("docker: pool: close: %w", ctx.Err())
	}
	// A container whose creation was cut short by Close may exist all
	// the same: remove what carries this pool's label and is not out.
	f := filters.NewArgs(filters.Arg("label", LabelPool+"="+p.id))
	list, lerr := p.cli.ContainerList(context.WithoutCancel(ctx), container.ListOptions{All: true, Filters: f})
	if lerr != nil {
		err = errors.Join(err, fmt.Errorf("docker: pool: list: %w", lerr))
	}
	p.mu.Lock()
	out := maps.Clone(p.out)
	p.mu.Unlock()
	for _, c := range list {
		if out[c.ID] {
			continue
		}
		if rerr := p.cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			err = errors.Join(err, fmt.Errorf("docker: pool: remove %s: %w", short(c.ID), rerr))
		}
	}
	if p.ownCli {
		p.cli.Close()
	}
	return err
}

// sweepPools removes the containers of pools whose process died: those
// labelled io.runbox.pool (=pool, when not empty), older than age, with
// no exec running in them (a live pool's idle containers, and every
// container it handed out that is in use, run their agent in an exec).
func sweepPools(ctx context.Context, cli *client.Client, age time.Duration, pool string) (int, error) {
	label := LabelPool
	if pool != "" {
		label += "=" + pool
	}
	f := filters.NewArgs(filters.Arg("label", label))
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("docker: pool: list: %w", err)
	}
	n := 0
	var errs []error
	for _, c := range list {
		if time.Since(time.Unix(c.Created, 0)) < age {
			continue
		}
		ci, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(ci.ExecIDs, func(x string) bool {
			xi, err := cli.ContainerExecInspect(ctx, x)
			return err != nil || xi.Running
		}) {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Provider is the docker backend's row of a provider table, as [Provider]
// makes it, with environments from p.
func (p *Pool) Provider(options func(envs.Spec) Options) envs.Provider {
	pr := Provider(options)
	pr.New = func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
		return p.New(ctx, options(spec))
	}
	return pr
}
