package termination

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/envs"
)

// cpuPeriod is the CFS period used for CPU limits, in microseconds.
const cpuPeriod = 100_000

// v1Controllers are the cgroup v1 controllers runbox uses.
var v1Controllers = []string{"freezer", "pids", "memory", "cpu"}

// mount is one cgroup or cgroup2 line of /proc/self/mountinfo.
type mount struct {
	point string   // where it is mounted
	root  string   // which cgroup of the hierarchy is at point
	v2    bool     // cgroup2
	ro    bool     // mounted read-only
	ctrls []string // v1 controllers (from the super options)
}

// cgroupMounts reads the cgroup mounts of this process's mount namespace.
func cgroupMounts() ([]mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("termination: %w", err)
	}
	var out []mount
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		m := mount{point: unescapeMount(f[4]), root: unescapeMount(f[3]), v2: fstype == "cgroup2"}
		m.ro = slices.Contains(strings.Split(f[5], ","), "ro")
		if !m.v2 {
			for _, o := range strings.Split(f[sep+3], ",") {
				if slices.Contains(v1Controllers, o) {
					m.ctrls = append(m.ctrls, o)
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads /proc/self/cgroup: controller → path, with "" for v2.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("termination: %w", err)
	}
	own := map[string]string{}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, nil
}

// dirIn is the directory of cgroup path (as /proc/self/cgroup names it)
// under mount m.
func dirIn(m mount, path string) string {
	rel := path
	if m.root != "/" {
		rel = strings.TrimPrefix(path, m.root)
	}
	return filepath.Join(m.point, rel)
}

// writable reports whether this process may create cgroups in dir.
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// killSupported reports whether the v2 hierarchy at unified offers
// cgroup.kill (Linux 5.14+). The root cgroup has no cgroup.kill, so it
// looks at dir, at the root's children and, failing those, at the kernel
// release.
func killSupported(unified, dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err == nil {
		return true
	}
	ents, _ := os.ReadDir(unified)
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(unified, e.Name(), "cgroup.kill")); err == nil {
				return true
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major > 5 || major == 5 && minor >= 14
}

// probeCgroups fills d.Unified, d.V1, d.Limits and d.Why for the three
// cgroup mechanisms.
func probeCgroups(d *Detection) {
	fail := func(why string) {
		for _, m := range []Mechanism{Hybrid, CgroupV2, CgroupV1} {
			d.Why[m] = why
		}
	}
	mounts, err := cgroupMounts()
	if err != nil {
		fail(err.Error())
		return
	}
	own, err := ownCgroups()
	if err != nil {
		fail(err.Error())
		return
	}
	var unified *mount
	d.V1 = map[string]string{}
	v1 := map[string]mount{}
	for i, m := range mounts {
		if m.v2 && (unified == nil || m.point == "/sys/fs/cgroup") {
			unified = &mounts[i]
		}
		for _, c := range m.ctrls {
			if _, dup := v1[c]; !dup {
				v1[c] = m
				d.V1[c] = m.point
			}
		}
	}

	// cgroup v2: unified alone (CgroupV2) or beside v1 (Hybrid).
	v2why := ""
	var v2ctrls []string
	switch {
	case unified == nil:
		v2why = "no cgroup2 hierarchy is mounted"
	case unified.ro:
		v2why = "the cgroup2 hierarchy at " + unified.point + " is mounted read-only"
	default:
		d.Unified = unified.point
		dir := dirIn(*unified, own[""])
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		v2ctrls = strings.Fields(string(b))
		switch {
		case !writable(dir):
			v2why = "cannot create cgroups in " + dir
		case !killSupported(unified.point, dir):
			v2why = "no cgroup.kill in the cgroup2 hierarchy (Linux 5.14+ needed)"
		}
	}
	switch {
	case v2why != "":
		d.Why[CgroupV2], d.Why[Hybrid] = v2why, v2why
	case len(v1) > 0:
		d.Why[CgroupV2] = fmt.Sprintf("the cgroup2 hierarchy at %s has no controllers (hybrid host: v1 controllers are mounted)", unified.point)
	default:
		d.Why[Hybrid] = "no cgroup v1 controllers are mounted (unified host)"
	}

	// cgroup v1: freezer for membership and kill; pids, memory and cpu
	// for limits (here and in Hybrid).
	v1ok := map[string]bool{}
	for _, c := range v1Controllers {
		if m, ok := v1[c]; ok && !m.ro && writable(dirIn(m, own[c])) {
			v1ok[c] = true
		}
	}
	if !v1ok["freezer"] {
		d.Why[CgroupV1] = "no writable cgroup v1 freezer hierarchy"
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		_, v2bad := d.Why[CgroupV2]
		_, hybridBad := d.Why[Hybrid]
		_, v1bad := d.Why[CgroupV1]
		if !v2bad && slices.Contains(v2ctrls, c) || (!hybridBad || !v1bad) && v1ok[c] {
			d.Limits = append(d.Limits, c)
		}
	}
}

// cgroupContainer is a CgroupV2, Hybrid or CgroupV1 container. In Hybrid
// mode the v2 cgroup holds membership and kill, and v1 cgroups (only for
// the limits that are set) hold the limits.
//
// The containerd library creates the cgroups and sets their limits
// (newCgroup); everything after that — Add, Kill, Procs, Remove,
// LimitEvent — is plain file operations on the directories, so a
// container reopened from its [ContainerRef] (openCgroup) runs exactly the
// same code as the one that made it.
type cgroupContainer struct {
	mech   Mechanism
	v2dir  string            // CgroupV2, Hybrid
	v1dirs map[string]string // controller → directory: CgroupV1; Hybrid with limits

	mu    sync.Mutex
	event string // sticky LimitEvent
}

var _ Container = (*cgroupContainer)(nil)

func newCgroup(m Mechanism, id string, limits envs.Limits, d Detection) (_ *cgroupContainer, err error) {
	name := "runbox-" + id
	c := &cgroupContainer{mech: m, v1dirs: map[string]string{}}
	defer func() {
		if err != nil {
			c.Remove(context.Background())
		}
	}()
	if m == CgroupV2 || m == Hybrid {
		own, err := ownCgroups()
		if err != nil {
			return nil, err
		}
		mounts, err := cgroupMounts()
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(mounts, func(x mount) bool { return x.v2 && x.point == d.Unified })
		if i < 0 {
			return nil, fmt.Errorf("termination: cgroup2 mount %q gone", d.Unified)
		}
		// The library takes the group relative to the mountpoint.
		group := filepath.Join(strings.TrimPrefix(dirIn(mounts[i], own[""]), d.Unified), name)
		if !strings.HasPrefix(group, "/") {
			group = "/" + group
		}
		res := &cgroup2.Resources{}
		if m == CgroupV2 {
			res = v2Resources(limits)
		}
		if _, err := cgroup2.NewManager(d.Unified, group, res); err != nil {
			// The directory may exist with some limits unset: remove it.
			c.v2dir = filepath.Join(d.Unified, group)
			return nil, fmt.Errorf("termination: create cgroup %s in %s: %w", group, d.Unified, err)
		}
		c.v2dir = filepath.Join(d.Unified, group)
		if m == CgroupV2 && limits.MemoryBytes > 0 {
			// Without swap the memory limit is a hard limit; a kernel
			// without swap accounting has no such file, which is fine.
			os.WriteFile(filepath.Join(c.v2dir, "memory.swap.max"), []byte("0"), 0)
		}
	}
	if m == CgroupV1 || m == Hybrid {
		var want []string
		if m == CgroupV1 {
			want = append(want, "freezer")
		}
		if limits.MemoryBytes > 0 {
			want = append(want, "memory")
		}
		if limits.Pids > 0 {
			want = append(want, "pids")
		}
		if limits.CPUs > 0 {
			want = append(want, "cpu")
		}
		for _, w := range want {
			if _, ok := d.V1[w]; !ok {
				return nil, fmt.Errorf("termination: no cgroup v1 %s controller: %w", w, envs.ErrUnsupported)
			}
		}
		if len(want) > 0 {
			path := cgroup1.NestedPath(name)
			hier := func() ([]cgroup1.Subsystem, error) {
				all, err := cgroup1.Default()
				if err != nil {
					return nil, err
				}
				return slices.DeleteFunc(all, func(s cgroup1.Subsystem) bool {
					return !slices.Contains(want, string(s.Name()))
				}), nil
			}
			for _, w := range want {
				rel, err := path(cgroup1.Name(w))
				if err != nil {
					return nil, fmt.Errorf("termination: v1 %s path: %w", w, err)
				}
				c.v1dirs[w] = filepath.Join(d.V1[w], rel)
			}
			if _, err := cgroup1.New(path, v1Resources(limits), cgroup1.WithHierarchy(hier)); err != nil {
				return nil, fmt.Errorf("termination: create v1 cgroups %s: %w", name, err)
			}
		}
	}
	return c, nil
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

func v2Resources(l envs.Limits) *cgroup2.Resources {
	r := &cgroup2.Resources{}
	if l.MemoryBytes > 0 {
		r.Memory = &cgroup2.Memory{Max: &l.MemoryBytes}
	}
	if l.Pids > 0 {
		r.Pids = &cgroup2.Pids{Max: l.Pids}
	}
	if l.CPUs > 0 {
		q, p := int64(l.CPUs*cpuPeriod), uint64(cpuPeriod)
		r.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&q, &p)}
	}
	return r
}

func v1Resources(l envs.Limits) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if l.MemoryBytes > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &l.MemoryBytes}
	}
	if l.Pids > 0 {
		r.Pids = &specs.LinuxPids{Limit: &l.Pids}
	}
	if l.CPUs > 0 {
		q, p := int64(l.CPUs*cpuPeriod), uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &q, Period: &p}
	}
	return r
}

func (c *cgroupContainer) Mechanism() Mechanism { return c.mech }

func (c *cgroupContainer) Ref() ContainerRef {
	return ContainerRef{Mechanism: c.mech, V2Dir: c.v2dir, V1Dirs: maps.Clone(c.v1dirs)}
}

// Add writes pid into the v2 cgroup first (membership, kill), then into
// each v1 cgroup (limits).
func (c *cgroupContainer) Add(pid int) error {
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

// readProcsTree reads cgroup.procs of dir and every cgroup below it. A
// missing dir is an empty cgroup.
func readProcsTree(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() || e.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("termination: list %s: %w", dir, err)
	}
	return pids, nil
}

func (c *cgroupContainer) Empty() (bool, error) {
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
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("termination: kill %s: %w", c.v2dir, err)
		}
		return nil
	}
	if dir := c.v1dirs["freezer"]; dir != "" {
		return killFrozen(dir)
	}
	return nil
}

// freezeWait bounds how long a v1 freezer may take to reach a state.
const freezeWait = 5 * time.Second

// killFrozen SIGKILLs every process of the v1 freezer cgroup dir (and the
// cgroups below it) while it is frozen.
func killFrozen(dir string) error {
	if err := setFreezer(dir, "FROZEN"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("termination: freeze %s: %w", dir, err)
	}
	pids, err := readProcsTree(dir)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("termination: kill %d: %w", pid, err))
		}
	}
	if err := setFreezer(dir, "THAWED"); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("termination: thaw %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// setFreezer writes state to dir's freezer.state and waits (bounded by
// freezeWait) until the kernel reports it: freezing is not immediate.
func setFreezer(dir, state string) error {
	deadline := time.Now().Add(freezeWait)
	backoff := time.Millisecond
	for {
		if err := writeCgroupFile(dir, "freezer.state", state); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dir, "freezer.state"))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == state {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freezer.state is %s after %v, not %s", bytes.TrimSpace(b), freezeWait, state)
		}
		time.Sleep(backoff) // bounded poll of a kernel state, not a wait for an event
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

// writeCgroupFile writes s to the control file name of cgroup dir (which
// must exist: it never creates a file).
func writeCgroupFile(dir, name, s string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// removeTries bounds the rmdir retries of one cgroup: a cgroup whose last
// task just exited can refuse removal (EBUSY) for a moment.
const removeTries = 6

// removeCgroup removes cgroup dir and every cgroup below it, deepest
// first, with rmdir (a cgroup's control files cannot be unlinked, and
// rmdir of a populated cgroup fails, so nothing that still runs is
// touched). A missing dir is not an error.
func removeCgroup(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("termination: remove %s: %w", dir, err)
	}
	slices.Reverse(dirs) // WalkDir lists a parent before its children
	for _, d := range dirs {
		delay := 10 * time.Millisecond
		for i := 0; ; i++ {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || i == removeTries-1 {
				return fmt.Errorf("termination: remove %s: %w", d, err)
			}
			time.Sleep(delay) // bounded retry of a kernel refusal, not a wait for an event
			delay *= 2
		}
	}
	return nil
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

// limitEventIn reads the limit counters of a v2 cgroup directory and of
// v1 memory and pids directories; any may be empty.
func limitEventIn(v2dir, v1mem, v1pids string) string {
	if v2dir != "" && keyValue(filepath.Join(v2dir, "memory.events"), "oom_kill") > 0 {
		return LimitMemory
	}
	if v1mem != "" {
		switch n := keyValue(filepath.Join(v1mem, "memory.oom_control"), "oom_kill"); {
		case n > 0:
			return LimitMemory
		case n < 0 && keyValue(filepath.Join(v1mem, "memory.failcnt"), "") > 0:
			return LimitMemory
		}
	}
	if v2dir != "" && keyValue(filepath.Join(v2dir, "pids.events"), "max") > 0 {
		return LimitPids
	}
	if v1pids != "" && keyValue(filepath.Join(v1pids, "pids.events"), "max") > 0 {
		return LimitPids
	}
	return ""
}

// keyValue reads the number after key in a "key value" per line file, or
// the whole file's number when key is "". It returns -1 when the file or
// key is missing.
func keyValue(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	if key == "" {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
