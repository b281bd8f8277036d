package termination

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/runbox/runbox/envs"
)

// dbusTimeout bounds one systemd call made without a caller's ctx (Add).
const dbusTimeout = 10 * time.Second

// connectSystemd reaches a systemd manager: the system bus as root, else
// the user bus. It returns the bus name it used.
func connectSystemd(ctx context.Context) (*sd.Conn, string, error) {
	var errs []error
	if os.Geteuid() == 0 {
		c, err := dial(ctx, sd.NewSystemConnectionContext)
		if err == nil {
			return c, "system", nil
		}
		errs = append(errs, fmt.Errorf("system bus: %w", err))
	}
	// Only a bus that already exists: with no address, the D-Bus library
	// would try to autolaunch a session bus, which is not a probe.
	if userBusExists() {
		c, err := dial(ctx, sd.NewUserConnectionContext)
		if err == nil {
			return c, "user", nil
		}
		errs = append(errs, fmt.Errorf("user bus: %w", err))
	} else {
		errs = append(errs, errors.New("user bus: DBUS_SESSION_BUS_ADDRESS unset and no $XDG_RUNTIME_DIR/bus"))
	}
	return nil, "", fmt.Errorf("no systemd manager reachable over D-Bus: %w", errors.Join(errs...))
}

func userBusExists() bool {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return true
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "bus"))
	return err == nil
}

// probeSystemd checks that a systemd manager answers and is far enough
// along to start units.
func probeSystemd(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dbusTimeout)
	defer cancel()
	c, bus, err := connectSystemd(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	p, err := c.SystemStateContext(ctx)
	if err != nil {
		return "", fmt.Errorf("systemd on the %s bus does not answer: %w", bus, err)
	}
	state := strings.Trim(p.Value.String(), `"`)
	switch state {
	case "running", "degraded", "starting", "initializing":
		return bus, nil
	}
	return "", fmt.Errorf("systemd on the %s bus is %s", bus, state)
}

// connectBus reaches the systemd manager on bus ("system" or "user"),
// as [Detection].Bus and [ContainerRef].Bus name it.
func connectBus(ctx context.Context, bus string) (*sd.Conn, error) {
	switch bus {
	case "system":
		return dial(ctx, sd.NewSystemConnectionContext)
	case "user":
		return dial(ctx, sd.NewUserConnectionContext)
	}
	return nil, fmt.Errorf("unknown bus %q", bus)
}

// dial opens a connection whose life is not tied to ctx. The D-Bus
// library closes a connection when the context it was dialled with ends;
// a scope's connection must outlive the call that created the scope (a
// command's ctx, a test's), or the teardown that comes later could not
// stop the unit. ctx still bounds the wait: if it ends first, dial returns
// its error and the dialling goroutine, which ends with the dial, closes
// the connection it gets.
func dial(ctx context.Context, open func(context.Context) (*sd.Conn, error)) (*sd.Conn, error) {
	type result struct {
		c   *sd.Conn
		err error
	}
	ch := make(chan result) // unbuffered: a result is either taken or closed
	abandoned := make(chan struct{})
	go func() {
		c, err := open(context.WithoutCancel(ctx))
		select {
		case ch <- result{c, err}:
		case <-abandoned:
			if c != nil {
				c.Close()
			}
		}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		close(abandoned)
		return nil, ctx.Err()
	}
}

// scopeContainer is a transient systemd scope, runbox-<id>.scope. The
// unit is created by Add, because systemd creates a scope around PIDs
// that already exist.
type scopeContainer struct {
	conn    *sd.Conn
	bus     string
	name    string
	props   []sd.Property
	unified string            // cgroup2 mount, for finding the scope's cgroup
	v1      map[string]string // v1 mounts by controller, likewise

	mu      sync.Mutex
	started bool
	v2dir   string            // the scope's cgroup in the cgroup2 hierarchy, once started
	v1dirs  map[string]string // and in the v1 memory, pids and name=systemd ones
	event   string
	closed  bool
}

var _ Container = (*scopeContainer)(nil)

func newScope(ctx context.Context, id string, limits envs.Limits, d Detection) (*scopeContainer, error) {
	conn, bus, err := connectSystemd(ctx)
	if err != nil {
		return nil, err
	}
	s := &scopeContainer{conn: conn, bus: bus, name: "runbox-" + id + ".scope", unified: d.Unified, v1: d.V1}
	s.props = []sd.Property{
		sd.PropDescription("runbox command " + id),
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
	}
	if limits.MemoryBytes > 0 {
		s.props = append(s.props, sd.Property{Name: "MemoryMax", Value: godbus.MakeVariant(uint64(limits.MemoryBytes))})
	}
	if limits.Pids > 0 {
		s.props = append(s.props, sd.Property{Name: "TasksMax", Value: godbus.MakeVariant(uint64(limits.Pids))})
	}
	if limits.CPUs > 0 {
		s.props = append(s.props, sd.Property{Name: "CPUQuotaPerSecUSec", Value: godbus.MakeVariant(uint64(limits.CPUs * 1e6))})
	}
	return s, nil
}

// openScope reopens the scope ref names on its bus. The unit is not
// looked up: one that is gone makes systemd answer NoSuchUnit, which Kill
// and Remove take as already stopped, and its cgroups read as empty.
func openScope(ctx context.Context, ref ContainerRef) (*scopeContainer, error) {
	if !strings.HasPrefix(ref.Unit, "runbox-") || !strings.HasSuffix(ref.Unit, ".scope") || strings.Contains(ref.Unit, "/") {
		return nil, fmt.Errorf("termination: open container: %q is not a runbox scope", ref.Unit)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	if err := checkRefDirs(mounts, ref, ref.Unit); err != nil {
		return nil, err
	}
	conn, err := connectBus(ctx, ref.Bus)
	if err != nil {
		return nil, fmt.Errorf("termination: open scope %s: %w", ref.Unit, err)
	}
	return &scopeContainer{
		conn: conn, bus: ref.Bus, name: ref.Unit,
		started: true, v2dir: ref.V2Dir, v1dirs: maps.Clone(ref.V1Dirs),
	}, nil
}

func (s *scopeContainer) Mechanism() Mechanism { return SystemdScope }

func (s *scopeContainer) Ref() ContainerRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ContainerRef{Mechanism: SystemdScope, Unit: s.name, Bus: s.bus, V2Dir: s.v2dir, V1Dirs: maps.Clone(s.v1dirs)}
}

// Add starts the scope with pid as its first process and waits for the
// start job to finish, so pid is inside when Add returns.
func (s *scopeContainer) Add(ctx context.Context, pid int) error {
	// Bounded even under a ctx without a deadline: the child is held at
	// its gate meanwhile.
	ctx, cancel := context.WithTimeout(ctx, dbusTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("termination: scope %s: already started (Add called twice, or a reopened scope)", s.name)
	}
	props := slices.Concat(s.props, []sd.Property{sd.PropPids(uint32(pid))})
	ch := make(chan string, 1)
	if _, err := s.conn.StartTransientUnitContext(ctx, s.name, "fail", props, ch); err != nil {
		return fmt.Errorf("termination: start scope %s: %w", s.name, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("termination: start scope %s: job %s", s.name, res)
		}
	case <-ctx.Done():
		return fmt.Errorf("termination: start scope %s: %w", s.name, ctx.Err())
	}
	s.started = true
	p, err := s.conn.GetUnitTypePropertyContext(ctx, s.name, "Scope", "ControlGroup")
	if err == nil {
		cg, _ := p.Value.Value().(string)
		s.setDirsLocked(cg)
	}
	return nil
}

// setDirsLocked finds the scope's cgroup cg (its ControlGroup property)
// in each hierarchy it matters in. s.mu is held.
func (s *scopeContainer) setDirsLocked(cg string) {
	if cg == "" {
		return
	}
	if s.unified != "" {
		s.v2dir = filepath.Join(s.unified, cg)
	}
	s.v1dirs = map[string]string{}
	for _, c := range []string{"memory", "pids"} {
		if m := s.v1[c]; m != "" {
			s.v1dirs[c] = filepath.Join(m, cg)
		}
	}
	if s.unified == "" {
		s.v1dirs["name=systemd"] = filepath.Join("/sys/fs/cgroup/systemd", cg)
	}
}

// dirs returns the scope's cgroup directories: in the v2 hierarchy, and
// in the v1 memory and pids hierarchies (hybrid hosts put limits there).
func (s *scopeContainer) dirs() (v2, mem, pids string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v2dir, s.v1dirs["memory"], s.v1dirs["pids"]
}

// Procs reads the scope's cgroup.procs in systemd's tracking hierarchy:
// cgroup2 when mounted, else name=systemd.
func (s *scopeContainer) Procs() ([]int, error) {
	s.mu.Lock()
	dirs := []string{s.v2dir, s.v1dirs["name=systemd"]}
	s.mu.Unlock()
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(dir); err == nil {
			return readProcsTree(dir)
		}
	}
	return nil, nil
}

func (s *scopeContainer) Empty() (bool, error) {
	pids, err := s.Procs()
	return len(pids) == 0, err
}

// Kill SIGKILLs every process of the scope through systemd, then stops
// the unit. A unit that is not loaded counts as stopped.
func (s *scopeContainer) Kill(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, dbusTimeout)
	defer cancel()
	if err := s.conn.KillUnitWithTarget(ctx, s.name, sd.All, int32(syscall.SIGKILL)); err != nil && !noSuchUnit(err) {
		return fmt.Errorf("termination: kill scope %s: %w", s.name, err)
	}
	return s.stop(ctx)
}

func (s *scopeContainer) stop(ctx context.Context) error {
	s.LimitEvent() // the cgroup goes with the unit
	ch := make(chan string, 1)
	if _, err := s.conn.StopUnitContext(ctx, s.name, "replace", ch); err != nil {
		if noSuchUnit(err) {
			return nil
		}
		return fmt.Errorf("termination: stop scope %s: %w", s.name, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("termination: stop scope %s: job %s", s.name, res)
		}
	case <-ctx.Done():
		return fmt.Errorf("termination: stop scope %s: %w", s.name, ctx.Err())
	}
	return nil
}

// Remove stops the unit if it is still there, clears a failed state and
// closes the D-Bus connection. After a failure the connection stays open
// so that Remove can be retried (see [Reaper]).
func (s *scopeContainer) Remove(ctx context.Context) error {
	s.mu.Lock()
	closed, started := s.closed, s.started
	s.mu.Unlock()
	if closed {
		return nil
	}
	if started {
		ctx, cancel := context.WithTimeout(ctx, dbusTimeout)
		defer cancel()
		if err := s.stop(ctx); err != nil {
			return err
		}
		if err := s.conn.ResetFailedUnitContext(ctx, s.name); err != nil && !noSuchUnit(err) && !notFailed(err) {
			return fmt.Errorf("termination: reset scope %s: %w", s.name, err)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.conn.Close()
	return nil
}

// LimitEvent reads the scope's cgroup counters (v2 memory.events and
// pids.events, or the v1 memory and pids hierarchies on hybrid hosts) and
// the unit's Result ("oom-kill"). The first event seen is kept.
func (s *scopeContainer) LimitEvent() string {
	s.mu.Lock()
	ev, started, closed := s.event, s.started, s.closed
	s.mu.Unlock()
	if ev != "" || !started || closed {
		return ev
	}
	v2, mem, pids := s.dirs()
	ev = limitEventIn(v2, mem, pids)
	if ev == "" {
		ctx, cancel := context.WithTimeout(context.Background(), dbusTimeout)
		defer cancel()
		if p, err := s.conn.GetUnitTypePropertyContext(ctx, s.name, "Scope", "Result"); err == nil {
			if r, _ := p.Value.Value().(string); r == "oom-kill" {
				ev = LimitMemory
			}
		}
	}
	s.mu.Lock()
	if s.event == "" {
		s.event = ev
	}
	ev = s.event
	s.mu.Unlock()
	return ev
}

func noSuchUnit(err error) bool {
	var e godbus.Error
	if errors.As(err, &e) {
		return e.Name == "org.freedesktop.systemd1.NoSuchUnit" || e.Name == "org.freedesktop.systemd1.LoadFailed"
	}
	return false
}

func notFailed(err error) bool {
	var e godbus.Error
	return errors.As(err, &e) && e.Name == "org.freedesktop.systemd1.UnitNotFailed"
}
