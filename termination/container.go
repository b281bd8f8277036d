package termination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"

	"github.com/runbox/runbox/envs"
)

// Mechanism is how a command tree is contained, weakest first.
type Mechanism int

const (
	// ProcessGroup is the zero value: no kernel container, only the
	// command's process group and the descendants found in /proc.
	ProcessGroup Mechanism = iota
	// CgroupV1 is a set of cgroup v1 hierarchies (freezer, pids, memory, cpu).
	CgroupV1
	// CgroupV2 is one cgroup in a cgroup v2 hierarchy with cgroup.kill.
	CgroupV2
	// Hybrid is a cgroup in a controller-less cgroup v2 hierarchy mounted
	// beside v1 (membership and cgroup.kill) plus v1 cgroups for limits.
	Hybrid
	// SystemdScope is a transient systemd scope unit, made over D-Bus.
	SystemdScope
)

func (m Mechanism) String() string {
	switch m {
	case ProcessGroup:
		return "process-group"
	case CgroupV1:
		return "cgroup-v1"
	case CgroupV2:
		return "cgroup-v2"
	case Hybrid:
		return "cgroup-hybrid"
	case SystemdScope:
		return "systemd-scope"
	}
	return fmt.Sprintf("Mechanism(%d)", int(m))
}

// MarshalText writes the mechanism as its name.
func (m Mechanism) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a name written by [Mechanism.MarshalText].
func (m *Mechanism) UnmarshalText(b []byte) error {
	for x := ProcessGroup; x <= SystemdScope; x++ {
		if x.String() == string(b) {
			*m = x
			return nil
		}
	}
	return fmt.Errorf("termination: unknown mechanism %q", b)
}

// Limit events reported by [Container.LimitEvent]; they match the
// KilledBy values of envs.ExitStatus.
const (
	LimitMemory = string(envs.KilledByMemoryLimit)
	LimitPids   = string(envs.KilledByPidsLimit)
)

// Container holds one command tree so that the whole tree can be killed,
// even processes that left the process group and were reparented away
// from the tree, and so that limits apply to all of it.
//
// # The Add contract
//
// The caller starts the child so that it blocks before running any user
// code (for example a shell that first reads one byte from a pipe), calls
// Add with its PID, and only then releases it. Everything the child forks
// afterwards is born inside the container. A child that runs user code
// before Add can fork escapees that the container never sees.
//
// If Add fails the child must not be released: the caller kills it (it
// has run nothing yet) and may retry with a weaker container. For
// [SystemdScope], Add is where the unit is created (systemd builds a scope
// around processes that already exist), so it is the call most likely to
// fail.
//
// A Container is safe for concurrent use.
type Container interface {
	// Mechanism says what kind of container this is.
	Mechanism() Mechanism
	// Add moves pid into the container. Call it once, for the blocked child.
	// ctx bounds the work (a D-Bus round trip for a systemd scope).
	Add(ctx context.Context, pid int) error
	// Kill SIGKILLs every process in the container. [KillTree] calls it only
	// after the parent had its SIGTERM and grace; callers should not call it
	// before that either.
	Kill(ctx context.Context) error
	// Procs lists the PIDs in the container now.
	Procs() ([]int, error)
	// Empty reports whether no live process is left in the container.
	Empty() (bool, error)
	// Remove deletes the container and releases what it holds (a scope's
	// D-Bus connection): call it even if Add was never called. It fails
	// while processes remain; the container then stays usable, so Remove
	// can be retried (see [Reaper]). A container already gone is not an
	// error.
	Remove(ctx context.Context) error
	// LimitEvent names the limit that killed something in the container:
	// [LimitMemory], [LimitPids], or "" when none did.
	LimitEvent() string
	// Ref describes the container so that another process can reopen it
	// with [OpenContainer]. Take it after Add: a scope's cgroup is known
	// only once the unit exists.
	Ref() ContainerRef
}

// ContainerRef is a serialisable description of an existing container:
// what [OpenContainer] needs to reach it again from another process, for
// example after the process that made it crashed. It names the container
// only; it holds no limits (they live in the kernel or in systemd) and no
// open handles. The zero value is a [ProcessGroup] container with no
// leader, which holds nothing.
type ContainerRef struct {
	Mechanism Mechanism `json:"mechanism"`
	// V2Dir is the cgroup2 directory ([CgroupV2], [Hybrid]), or the
	// scope's cgroup in the cgroup2 hierarchy. Empty when there is none.
	V2Dir string `json:"v2_dir,omitempty"`
	// V1Dirs maps a cgroup v1 hierarchy to the container's directory in
	// it: "freezer" ([CgroupV1]), the limit controllers "memory", "pids"
	// and "cpu" ([CgroupV1], [Hybrid]), and for a scope "memory", "pids"
	// and "name=systemd" (systemd's own tracking hierarchy on hosts
	// without cgroup2).
	V1Dirs map[string]string `json:"v1_dirs,omitempty"`
	// Unit is the scope's unit name ([SystemdScope]).
	Unit string `json:"unit,omitempty"`
	// Bus is the D-Bus bus of the systemd manager that owns Unit:
	// "system" or "user".
	Bus string `json:"bus,omitempty"`
	// Leader is the process group leader of a [ProcessGroup] container
	// (zero before Add).
	Leader Proc `json:"leader,omitzero"`
}

// OpenContainer reopens the container ref describes, typically in another
// process than the one that made it. It never creates anything: it checks
// that ref names something runbox could have made (every directory lies
// strictly inside a cgroup hierarchy of the right version and is named
// runbox-*, the unit is runbox-*.scope), connects to the systemd bus for a
// scope, and returns a Container whose Kill, Procs, Empty, Remove and
// LimitEvent act on what exists now. A cgroup or unit that is gone counts
// as an empty container whose Kill and Remove succeed. Add works on a
// reopened cgroup container, not on a reopened scope (systemd makes a
// scope around its first processes only). ctx bounds the D-Bus connection.
func OpenContainer(ctx context.Context, ref ContainerRef) (Container, error) {
	switch ref.Mechanism {
	case ProcessGroup:
		return &groupContainer{leader: ref.Leader}, nil
	case CgroupV1, CgroupV2, Hybrid:
		return openCgroup(ref)
	case SystemdScope:
		return openScope(ctx, ref)
	}
	return nil, fmt.Errorf("termination: open container: unknown mechanism %d", int(ref.Mechanism))
}

// ErrNotEmpty: a container still holds processes and cannot be removed.
var ErrNotEmpty = errors.New("termination: container not empty")

// groupContainer is the ProcessGroup mechanism: the members of the process
// group led by the added child. It contains nothing the kernel would
// enforce; a process that calls setsid or setpgid leaves it.
type groupContainer struct {
	mu     sync.Mutex
	leader Proc // zero until Add
}

var _ Container = (*groupContainer)(nil)

// NewGroupContainer returns the weakest container: the process group
// whose leader is the PID given to Add (the caller starts the child with
// Setpgid). It never fails and enforces no limits.
func NewGroupContainer() Container { return &groupContainer{} }

func (g *groupContainer) Mechanism() Mechanism { return ProcessGroup }

func (g *groupContainer) Add(_ context.Context, pid int) error {
	p, err := Identify(pid)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.leader = p
	g.mu.Unlock()
	return nil
}

func (g *groupContainer) members() ([]Proc, error) {
	g.mu.Lock()
	leader := g.leader
	g.mu.Unlock()
	if leader.PID == 0 {
		return nil, nil
	}
	all, err := snapshot()
	if err != nil {
		return nil, err
	}
	return groupMembers(all, leader), nil
}

func (g *groupContainer) Procs() ([]int, error) {
	ms, err := g.members()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range ms {
		pids = append(pids, p.PID)
	}
	return pids, nil
}

func (g *groupContainer) Empty() (bool, error) {
	pids, err := g.Procs()
	return len(pids) == 0, err
}

func (g *groupContainer) Kill(context.Context) error {
	ms, err := g.members()
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ms {
		if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, ErrGone) && !errors.Is(err, ErrRecycled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (g *groupContainer) Remove(context.Context) error { return nil }
func (g *groupContainer) LimitEvent() string           { return "" }

func (g *groupContainer) Ref() ContainerRef {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ContainerRef{Mechanism: ProcessGroup, Leader: g.leader}
}

// groupMembers lists the live members of leader's process group. The
// kernel does not hand out a PID while a process group of that number
// exists, so while members remain the number is still leader's, unless a
// process now owns leader.PID with another start time: then leader's group
// died out, the number was reused, and the group is a stranger's.
func groupMembers(all []stat, leader Proc) []Proc {
	if leader.PID <= 0 {
		return nil
	}
	for _, s := range all {
		if s.pid == leader.PID && s.start != leader.StartTime {
			return nil
		}
	}
	var out []Proc
	for _, s := range all {
		if s.pgid == leader.PID && s.start >= leader.StartTime && !s.dead() {
			out = append(out, Proc{PID: s.pid, StartTime: s.start})
		}
	}
	return out
}

// ContainerOption configures [NewContainer].
type ContainerOption func(*containerConfig) error

type containerConfig struct {
	mech   Mechanism
	forced bool
	det    *Detection
}

// WithMechanism makes [NewContainer] use exactly m and fail (with an error
// matching envs.ErrUnsupported when m is not usable here) instead of
// falling back to a weaker mechanism.
func WithMechanism(m Mechanism) ContainerOption {
	return func(c *containerConfig) error {
		if m < ProcessGroup || m > SystemdScope {
			return fmt.Errorf("termination: unknown mechanism %d", int(m))
		}
		c.mech, c.forced = m, true
		return nil
	}
}

// WithDetection reuses d instead of probing the machine again.
func WithDetection(d Detection) ContainerOption {
	return func(c *containerConfig) error { c.det = &d; return nil }
}

// NewContainer makes a container for one command tree with the strongest
// mechanism usable here (see [Detect]), falling back to the next one when
// making it fails, down to [ProcessGroup], which cannot fail. The result's
// Mechanism says what was chosen, so a fallback is visible. id names the
// container (the scope is runbox-<id>.scope, the cgroup runbox-<id>); it
// must be unique among live containers and use only letters, digits, '-',
// '_' and '.'. Limits apply where the mechanism can enforce them; zero
// fields mean no limit. ctx bounds the setup only.
func NewContainer(ctx context.Context, id string, limits envs.Limits, opts ...ContainerOption) (Container, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	var cfg containerConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.det == nil {
		d := Detect(ctx)
		cfg.det = &d
	}
	d := *cfg.det
	candidates := preferred(d, limits)
	if cfg.forced {
		if !d.Can(cfg.mech) {
			return nil, fmt.Errorf("termination: %v: %s: %w", cfg.mech, d.Why[cfg.mech], envs.ErrUnsupported)
		}
		candidates = []Mechanism{cfg.mech}
	}
	var errs []error
	for _, m := range candidates {
		c, err := newContainer(ctx, m, id, limits, d)
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("%v: %w", m, err))
	}
	return nil, fmt.Errorf("termination: no container for %s: %w", id, errors.Join(errs...))
}

// preferred orders the usable mechanisms for limits. With a memory limit
// on a host whose memory controller is cgroup v1 (hybrid or legacy), a
// systemd scope comes after runbox's own cgroups: systemd tracks OOM kills
// only through cgroup v2's memory.events and removes an emptied scope at
// once, taking the v1 counters with it, so an OOM kill could go
// unreported. runbox's own cgroups stay until Remove.
func preferred(d Detection, limits envs.Limits) []Mechanism {
	if limits.MemoryBytes == 0 || d.V1["memory"] == "" || !d.Can(SystemdScope) {
		return d.Usable
	}
	out := make([]Mechanism, 0, len(d.Usable))
	for _, m := range d.Usable {
		if m != SystemdScope {
			out = append(out, m)
		}
	}
	// Still a fallback before plain process groups.
	return slices.Insert(out, len(out)-1, SystemdScope)
}

func newContainer(ctx context.Context, m Mechanism, id string, limits envs.Limits, d Detection) (Container, error) {
	switch m {
	case SystemdScope:
		return newScope(ctx, id, limits, d)
	case CgroupV1, CgroupV2, Hybrid:
		return newCgroup(m, id, limits, d)
	}
	return NewGroupContainer(), nil
}

func validID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("termination: container id %q: empty or longer than 128 bytes", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("termination: container id %q: only letters, digits, '-', '_' and '.' are allowed", id)
		}
	}
	if id == "." || id == ".." {
		return fmt.Errorf("termination: container id %q is not a name", id)
	}
	return nil
}
