package termination

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/runbox/runbox/envs"
)

// cgroupContainer is a CgroupV2, Hybrid or CgroupV1 container. In Hybrid
// mode the v2 cgroup holds membership and kill, and v1 cgroups (only for
// the limits that are set) hold the limits.
//
// Its whole life is plain file operations on the cgroup directories —
// mkdir and the limit files (newCgroup), then cgroup.procs, cgroup.kill or
// the v1 freezer, rmdir — so a container reopened from its [ContainerRef]
// (openCgroup) runs exactly the same code as the one that made it. The
// package doc says why no cgroup library does it.
type cgroupContainer struct {
	mech   Mechanism
	v2dir  string            // CgroupV2, Hybrid
	v1dirs map[string]string // controller → directory: CgroupV1; Hybrid with limits

	mu    sync.Mutex
	event string // sticky LimitEvent
}

var _ Container = (*cgroupContainer)(nil)

// newCgroup makes the cgroups of a container of mechanism m, named
// runbox-<id>, beside this process's own cgroup in each hierarchy, with
// limits. A cgroup of that name that exists already is an error, never
// shared. Whatever it made is removed when it fails.
func newCgroup(m Mechanism, id string, limits envs.Limits, d Detection) (_ *cgroupContainer, err error) {
	c := &cgroupContainer{mech: m, v1dirs: map[string]string{}}
	defer func() {
		if err != nil {
			c.Remove(context.Background())
		}
	}()
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	name := "runbox-" + id
	if m == CgroupV2 || m == Hybrid {
		if err := c.makeV2(mounts, own[""], name, limits, d); err != nil {
			return nil, err
		}
	}
	if m == CgroupV1 || m == Hybrid {
		if err := c.makeV1(mounts, own, name, limits, d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// makeV2 makes the container's cgroup in the cgroup2 hierarchy at
// d.Unified, as a child of ownPath (this process's cgroup there), with
// the limits when the container is CgroupV2 (a Hybrid one keeps its
// limits in v1).
func (c *cgroupContainer) makeV2(mounts []mount, ownPath, name string, limits envs.Limits, d Detection) error {
	i := slices.IndexFunc(mounts, func(x mount) bool { return x.v2 && x.point == d.Unified })
	if i < 0 {
		return fmt.Errorf("termination: cgroup2 mount %q gone", d.Unified)
	}
	parent := dirIn(mounts[i], ownPath)
	var files []limitFile
	if c.mech == CgroupV2 {
		files = v2Limits(limits)
	}
	if err := enableControllers(d.Unified, parent, controllers(files)); err != nil {
		return err
	}
	dir := filepath.Join(parent, name)
	if err := makeCgroup(dir); err != nil {
		return err
	}
	c.v2dir = dir
	return writeLimits(dir, files)
}

// makeV1 makes the container's v1 cgroups: freezer (CgroupV1, for
// membership and kill) and one per limit that is set, each as a child of
// this process's cgroup in that controller's hierarchy. It refuses before
// making anything when a controller it needs is not mounted.
func (c *cgroupContainer) makeV1(mounts []mount, own map[string]string, name string, limits envs.Limits, d Detection) error {
	want := v1Wanted(c.mech, limits)
	for _, w := range want {
		if _, ok := d.V1[w]; !ok {
			return fmt.Errorf("termination: no cgroup v1 %s controller: %w", w, envs.ErrUnsupported)
		}
	}
	for _, w := range want {
		i := slices.IndexFunc(mounts, func(x mount) bool { return !x.v2 && x.point == d.V1[w] })
		if i < 0 {
			return fmt.Errorf("termination: cgroup v1 %s mount %q gone", w, d.V1[w])
		}
		dir := filepath.Join(dirIn(mounts[i], own[w]), name)
		if err := makeCgroup(dir); err != nil {
			return err
		}
		c.v1dirs[w] = dir
		if err := writeLimits(dir, v1Limits(w, limits)); err != nil {
			return err
		}
	}
	return nil
}

// openCgroup reopens the cgroups ref names, after checking that each
// directory is a runbox cgroup inside a hierarchy of the right version.
// It creates nothing; missing directories make an empty container.
func openCgroup(ref ContainerRef) (*cgroupContainer, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	switch {
	case (ref.Mechanism == CgroupV2 || ref.Mechanism == Hybrid) && ref.V2Dir == "":
		return nil, fmt.Errorf("termination: open %v container: no cgroup2 directory", ref.Mechanism)
	case ref.Mechanism == CgroupV1 && ref.V1Dirs["freezer"] == "":
		return nil, fmt.Errorf("termination: open %v container: no freezer directory", ref.Mechanism)
	case ref.Mechanism == CgroupV1 && ref.V2Dir != "":
		return nil, fmt.Errorf("termination: open %v container: unexpected cgroup2 directory", ref.Mechanism)
	}
	if err := checkRefDirs(mounts, ref, "runbox-"); err != nil {
		return nil, err
	}
	return &cgroupContainer{mech: ref.Mechanism, v2dir: ref.V2Dir, v1dirs: maps.Clone(ref.V1Dirs)}, nil
}

// checkRefDirs checks every directory of ref: absolute and clean, named
// with prefix, and strictly inside a mounted hierarchy of its version
// (cgroup2 for V2Dir, v1 for V1Dirs). It keeps a forged or corrupted ref
// from pointing Kill or Remove at a cgroup runbox did not make, such as a
// hierarchy's root.
func checkRefDirs(mounts []mount, ref ContainerRef, prefix string) error {
	check := func(dir string, v2 bool) error {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(filepath.Base(dir), prefix) {
			return fmt.Errorf("termination: open container: %q is not a runbox cgroup", dir)
		}
		for _, m := range mounts {
			if m.v2 == v2 && strings.HasPrefix(dir, strings.TrimSuffix(m.point, "/")+"/") {
				return nil
			}
		}
		return fmt.Errorf("termination: open container: %q is in no mounted cgroup hierarchy of its version", dir)
	}
	if ref.V2Dir != "" {
		if err := check(ref.V2Dir, true); err != nil {
			return err
		}
	}
	for _, dir := range ref.V1Dirs {
		if err := check(dir, false); err != nil {
			return err
		}
	}
	return nil
}

func (c *cgroupContainer) Mechanism() Mechanism { return c.mech }

func (c *cgroupContainer) Ref() ContainerRef {
	return ContainerRef{Mechanism: c.mech, V2Dir: c.v2dir, V1Dirs: maps.Clone(c.v1dirs)}
}

// Add writes pid into the v2 cgroup first (membership, kill), then into
// each v1 cgroup (limits).
func (c *cgroupContainer) Add(_ context.Context, pid int) error {
	dirs := slices.Sorted(maps.Values(c.v1dirs))
	if c.v2dir != "" {
		dirs = append([]string{c.v2dir}, dirs...)
	}
	for _, dir := range dirs {
		if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("termination: add %d to %s: %w", pid, dir, err)
		}
	}
	return nil
}

// Procs lists the container's processes: those of the v2 cgroup and of
// every v1 cgroup. In Hybrid mode the v2 cgroup alone would do, except
// that an exiting task can leave the v1 lists a moment later than the v2
// one, and such a task still keeps a v1 cgroup from being removed.
func (c *cgroupContainer) Procs() ([]int, error) {
	var pids []int
	if c.v2dir != "" {
		ps, err := readProcsTree(c.v2dir)
		if err != nil {
			return nil, err
		}
		pids = append(pids, ps...)
	}
	for _, dir := range c.v1dirs {
		ps, err := readProcsTree(dir)
		if err != nil {
			return nil, err
		}
		pids = append(pids, ps...)
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// Empty reports whether no process is left in the container. With a v2
// cgroup it reads the one line of cgroup.events that says so for the
// whole subtree, instead of listing every cgroup: a command's end asks
// this every time. A task that has exited there may still be in a v1
// list a moment longer; it is no process of the command's any more, and
// it only delays the v1 cgroup's removal, which is retried.
func (c *cgroupContainer) Empty() (bool, error) {
	if c.v2dir != "" {
		switch populated, err := cgroupPopulated(c.v2dir); {
		case err == nil:
			return !populated, nil
		case cgroupGone(err):
			return true, nil
		}
	}
	pids, err := c.Procs()
	return len(pids) == 0, err
}

// Kill SIGKILLs everything in the container: cgroup.kill on v2; on v1,
// freeze, signal each process, thaw (the frozen processes cannot fork or
// exit meanwhile, so the list is exact and no PID is recycled under it).
// A cgroup that is gone holds nothing to kill.
func (c *cgroupContainer) Kill(ctx context.Context) error {
	if c.v2dir != "" {
		err := writeCgroupFile(c.v2dir, "cgroup.kill", "1")
		if err != nil && !cgroupGone(err) {
			return fmt.Errorf("termination: kill %s: %w", c.v2dir, err)
		}
		return nil
	}
	if dir := c.v1dirs["freezer"]; dir != "" {
		return killFrozen(dir)
	}
	return nil
}

// Remove deletes the cgroups (the v1 ones first, then v2), after noting
// any limit event, which outlives the cgroup. It fails with [ErrNotEmpty]
// while processes remain; cgroups already gone are not an error.
func (c *cgroupContainer) Remove(context.Context) error {
	c.LimitEvent()
	if pids, err := c.Procs(); err != nil {
		return err
	} else if len(pids) > 0 {
		return fmt.Errorf("termination: remove %v container (%d processes): %w", c.mech, len(pids), ErrNotEmpty)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(c.v1dirs)) {
		if err := removeCgroup(c.v1dirs[k]); err != nil {
			errs = append(errs, err)
		}
	}
	if c.v2dir != "" {
		if err := removeCgroup(c.v2dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LimitEvent reads the kernel's counters: memory.events oom_kill and
// pids.events max on v2; memory.oom_control oom_kill (or, on kernels
// without that field, memory.failcnt) and pids.events max on v1. The
// first event seen is kept, so it can be read after Remove.
func (c *cgroupContainer) LimitEvent() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.event == "" {
		c.event = limitEventIn(c.v2dir, c.v1dirs["memory"], c.v1dirs["pids"])
	}
	return c.event
}
