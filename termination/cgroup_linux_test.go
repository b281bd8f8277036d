//go:build linux

package termination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
)

// mechanisms are the container mechanisms the tests cover. The cgroup ones
// run on the host; SystemdScope runs inside the systemd container
// (scripts/systemd/run-tests.sh sets systemdTestsEnv).
var mechanisms = []Mechanism{SystemdScope, CgroupV2, Hybrid, CgroupV1}

// systemdTestsEnv selects the systemd-scope tests.
const systemdTestsEnv = "RUNBOX_SYSTEMD_TESTS"

// newTestContainer makes a container with exactly m, or skips (fails
// under RUNBOX_INTEGRATION=require) when m is not usable here. Cleanup
// removes it and checks that nothing is left.
func newTestContainer(t *testing.T, m Mechanism, limits envs.Limits) Container {
	t.Helper()
	d := Detect(t.Context())
	switch {
	case m == SystemdScope && os.Getenv(systemdTestsEnv) != "1":
		// Selected, not missing: these run where systemd is PID 1.
		t.Skipf("systemd-scope tests run in the systemd container (scripts/systemd/run-tests.sh sets %s=1)", systemdTestsEnv)
	case m == CgroupV2 && d.Can(Hybrid), m == Hybrid && d.Can(CgroupV2):
		// Not a missing service: a host is either unified or hybrid.
		t.Skipf("%v does not apply to this host, which uses %v", m, d.Mechanism)
	case !d.Can(m):
		integration.Skip(t, "%s", fmt.Sprintf("%v unusable here: %s", m, d.Why[m]))
	}
	id := fmt.Sprintf("test-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", "#", "-").Replace(t.Name()))
	c, err := NewContainer(t.Context(), id, limits, WithMechanism(m), WithDetection(d))
	if err != nil {
		t.Fatalf("NewContainer(%v): %v", m, err)
	}
	if c.Mechanism() != m {
		t.Fatalf("Mechanism() = %v; want %v", c.Mechanism(), m)
	}
	t.Cleanup(func() {
		c.Kill(context.Background())
		testwait.Within(t, 10*time.Second, "container empty", func() bool { e, _ := c.Empty(); return e })
		if err := c.Remove(context.Background()); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	return c
}

func eachMechanism(t *testing.T, f func(t *testing.T, m Mechanism)) {
	for _, m := range mechanisms {
		t.Run(m.String(), func(t *testing.T) { f(t, m) })
	}
}

// A process that double-forked out of a new session and was reparented to
// init before any snapshot is found only through the container.
func TestKillTree_ContainerCatchesDoubleFork(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		c := newTestContainer(t, m, envs.Limits{})
		s := start(t, spec{helper: "daemon", c: c})
		orphan := s.others[0]
		if st, err := readStat(orphan.PID); err != nil || st.ppid == s.root.PID {
			t.Fatalf("orphan %v not reparented away (stat %+v, %v)", orphan, st, err)
		}
		if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: c}); err != nil {
			t.Fatalf("KillTree = %v", err)
		}
		s.wait(t)
		assertGone(t, s.all()...)
		if e, err := c.Empty(); !e || err != nil {
			t.Fatalf("container Empty() = %v, %v after KillTree", e, err)
		}
	})
}

// Every scenario of the process-only tests must also hold in a container,
// and KillTree must remove the container (its directories vanish).
func TestKillTree_ContainerScenarios(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		for _, h := range []string{"trap", "setsid", "nohup", "reaper"} {
			t.Run(h, func(t *testing.T) {
				c := newTestContainer(t, m, envs.Limits{})
				s := start(t, spec{helper: h, c: c})
				procs, err := c.Procs()
				if err != nil || len(procs) < 1+len(s.others) {
					t.Fatalf("Procs() = %v, %v; want the %d processes of the tree", procs, err, 1+len(s.others))
				}
				if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: c}); err != nil {
					t.Fatalf("KillTree = %v", err)
				}
				s.wait(t)
				assertGone(t, s.all()...)
				assertRemoved(t, c)
			})
		}
	})
}

// The parent that reaps its children on SIGTERM must exit by itself even
// with a container: the cgroup kill never comes first.
func TestKillTree_ContainerKillNeverFirst(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		c := newTestContainer(t, m, envs.Limits{})
		s := start(t, spec{helper: "reaper", c: c})
		if err := KillTree(t.Context(), s.root, Options{Grace: 5 * time.Second, Container: c}); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := s.wait(t); !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Fatalf("parent's exit = %v; want exit status 7", err)
		}
	})
}

// A fork storm under a pids limit is contained, reported as pids-limit,
// and torn down completely.
func TestContainer_ForkStormPidsLimit(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		c := newTestContainer(t, m, envs.Limits{Pids: 16})
		storm := `echo ready; for i in $(seq 1 2000); do sleep 1000 & done; wait`
		s := start(t, spec{argv: []string{"bash", "-c", storm}, c: c})
		testwait.Within(t, 20*time.Second, "pids-limit event", func() bool { return c.LimitEvent() == LimitPids })
		procs, _ := c.Procs()
		if len(procs) > 16 {
			t.Errorf("%d processes in a container limited to 16", len(procs))
		}
		if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: c}); err != nil {
			t.Fatalf("KillTree = %v", err)
		}
		s.wait(t)
		if got := c.LimitEvent(); got != LimitPids {
			t.Fatalf("LimitEvent() after teardown = %q; want %q", got, LimitPids)
		}
	})
}

// A memory hog is killed by the kernel under a memory limit, and the
// container reports memory-limit.
func TestContainer_MemoryHogReported(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		if d := Detect(t.Context()); m == SystemdScope && d.V1["memory"] != "" {
			// systemd removes an emptied scope at once and only reports
			// OOM kills through cgroup v2, so NewContainer does not pick a
			// scope for memory limits here (TestNewContainer_MemoryLimitAvoidsV1Scope).
			t.Skip("systemd cannot report OOM kills in a v1 memory hierarchy")
		}
		c := newTestContainer(t, m, envs.Limits{MemoryBytes: 64 << 20})
		s := start(t, spec{helper: "memhog", c: c})
		err := s.wait(t)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("memory hog ended with %v; want SIGKILL by the OOM killer", err)
		}
		if got := c.LimitEvent(); got != LimitMemory {
			t.Fatalf("LimitEvent() = %q; want %q", got, LimitMemory)
		}
		if err := KillTree(t.Context(), s.root, Options{Container: c}); err != nil {
			t.Fatal(err)
		}
		if got := c.LimitEvent(); got != LimitMemory {
			t.Fatalf("LimitEvent() after Remove = %q; want %q (it must outlive the cgroup)", got, LimitMemory)
		}
	})
}

// Many contained trees torn down at once.
func TestKillTree_ManyContainersAtOnce(t *testing.T) {
	d := Detect(t.Context())
	if d.Mechanism == ProcessGroup {
		integration.Skip(t, "%s", "no container mechanism: "+d.String())
	}
	const n = 6
	var ss []*started
	var cs []Container
	for i := range n {
		c, err := NewContainer(t.Context(), fmt.Sprintf("test-%d-many-%d", os.Getpid(), i), envs.Limits{Pids: 200}, WithDetection(d))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill(context.Background()); c.Remove(context.Background()) })
		cs = append(cs, c)
		ss = append(ss, start(t, spec{helper: []string{"daemon", "setsid", "reaper"}[i%3], c: c}))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range ss {
		wg.Go(func() { errs[i] = KillTree(t.Context(), ss[i].root, Options{Grace: shortGrace, Container: cs[i]}) })
	}
	wg.Wait()
	for i, s := range ss {
		if errs[i] != nil {
			t.Errorf("tree %d (%v): %v", i, cs[i].Mechanism(), errs[i])
		}
		s.wait(t)
		assertGone(t, s.all()...)
	}
}

// NewContainer falls back rather than fail, and says what it chose.
func TestNewContainer_StrongestOrFallback(t *testing.T) {
	d := Detect(t.Context())
	c, err := NewContainer(t.Context(), fmt.Sprintf("test-%d-best", os.Getpid()), envs.Limits{}, WithDetection(d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove(context.Background()) })
	if c.Mechanism() != d.Mechanism {
		t.Errorf("Mechanism() = %v; want the detected %v", c.Mechanism(), d.Mechanism)
	}
	if _, err := NewContainer(t.Context(), "bad/id", envs.Limits{}); err == nil {
		t.Error("NewContainer accepted an id with a slash")
	}
	for m := range SystemdScope + 1 {
		if d.Can(m) {
			continue
		}
		_, err := NewContainer(t.Context(), "x", envs.Limits{}, WithMechanism(m), WithDetection(d))
		if !errors.Is(err, envs.ErrUnsupported) {
			t.Errorf("NewContainer(WithMechanism(%v)) = %v; want ErrUnsupported", m, err)
		}
	}
}

// A container that cannot be removed is kept by the Reaper, not dropped,
// and removed by a later retry.
func TestReaper_KeepsAndRetries(t *testing.T) {
	c := newTestContainer(t, cgroupMechanism(t), envs.Limits{})
	s := start(t, spec{helper: "trap", c: c})
	if err := c.Remove(t.Context()); err == nil {
		t.Fatal("Remove of a populated cgroup succeeded")
	}
	r := NewReaper(-1, nil)
	r.Add(c)
	if err := s.root.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if err := r.Close(t.Context()); err != nil {
		t.Fatalf("Reaper.Close = %v", err)
	}
	if p := r.Pending(); len(p) != 0 {
		t.Fatalf("Pending() = %v after a successful retry", p)
	}
}

// containerDirs lists a container's cgroup directories.
func containerDirs(c Container) []string {
	var dirs []string
	if sc, ok := c.(*scopeContainer); ok {
		v2, mem, pids := sc.dirs()
		for _, d := range []string{v2, mem, pids} {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
		return dirs
	}
	cc, ok := c.(*cgroupContainer)
	if !ok {
		return nil
	}
	if cc.v2dir != "" {
		dirs = append(dirs, cc.v2dir)
	}
	for _, d := range cc.v1dirs {
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs
}

// The ProcessGroup container is the fallback that always exists: it lists
// the group's members and KillTree works through it.
func TestGroupContainer_Members(t *testing.T) {
	c, err := NewContainer(t.Context(), "group", envs.Limits{}, WithMechanism(ProcessGroup))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, spec{helper: "nohup", c: c})
	procs, err := c.Procs()
	if err != nil || len(procs) != 2 {
		t.Fatalf("Procs() = %v, %v; want the leader and its nohup child", procs, err)
	}
	if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: c}); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	assertGone(t, s.all()...)
	if e, err := c.Empty(); !e || err != nil {
		t.Fatalf("Empty() = %v, %v", e, err)
	}
}

// reopen round-trips c's ref through JSON, as a registry stores it, and
// opens it again.
func reopen(t *testing.T, c Container) Container {
	t.Helper()
	b, err := json.Marshal(c.Ref())
	if err != nil {
		t.Fatal(err)
	}
	var ref ContainerRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if ref.Mechanism != c.Mechanism() {
		t.Fatalf("ref %s: mechanism %v; want %v", b, ref.Mechanism, c.Mechanism())
	}
	o, err := OpenContainer(t.Context(), ref)
	if err != nil {
		t.Fatalf("OpenContainer(%s): %v", b, err)
	}
	return o
}

// A container reopened from its ref (as a restarted registry does) holds
// the same processes, and KillTree through it kills a double-forked
// setsid orphan that only the container can find, then removes the
// cgroups. Reopening the ref again afterwards creates nothing: the
// container is empty and removing it succeeds. Breaks if the reopened
// container reads or kills anything other than the original's cgroups.
func TestOpenContainer_KillTreeFromRef(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		c := newTestContainer(t, m, envs.Limits{})
		s := start(t, spec{helper: "daemon", c: c})
		orphan := s.others[0]
		if st, err := readStat(orphan.PID); err != nil || st.ppid == s.root.PID {
			t.Fatalf("orphan %v not reparented away (stat %+v, %v)", orphan, st, err)
		}
		o := reopen(t, c)
		if o.Mechanism() != m {
			t.Fatalf("reopened Mechanism() = %v; want %v", o.Mechanism(), m)
		}
		want, _ := c.Procs()
		got, err := o.Procs()
		if err != nil || !slices.Equal(got, want) || !slices.Contains(got, orphan.PID) {
			t.Fatalf("reopened Procs() = %v, %v; want %v with the orphan %d", got, err, want, orphan.PID)
		}
		if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: o}); err != nil {
			t.Fatalf("KillTree with the reopened container = %v", err)
		}
		s.wait(t)
		assertGone(t, s.all()...)
		assertRemoved(t, c)
		gone := reopen(t, c)
		if e, err := gone.Empty(); !e || err != nil {
			t.Errorf("Empty() of a gone container = %v, %v; want true, nil", e, err)
		}
		if err := gone.Kill(t.Context()); err != nil {
			t.Errorf("Kill() of a gone container = %v", err)
		}
		if err := gone.Remove(t.Context()); err != nil {
			t.Errorf("Remove() of a gone container = %v", err)
		}
		for _, dir := range containerDirs(c) {
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("reopening a gone container created %s (%v)", dir, err)
			}
		}
	})
}

// A reopened cgroup container refuses to remove a populated cgroup, like
// the original, and Add works on it.
func TestOpenContainer_RemoveRefusesPopulated(t *testing.T) {
	c := newTestContainer(t, cgroupMechanism(t), envs.Limits{})
	o := reopen(t, c)
	s := start(t, spec{helper: "trap", c: o}) // Add through the reopened container
	if procs, _ := c.Procs(); !slices.Contains(procs, s.root.PID) {
		t.Fatalf("original Procs() = %v after Add to the reopened one; want %d", procs, s.root.PID)
	}
	if err := o.Remove(t.Context()); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Remove of a populated reopened cgroup = %v; want ErrNotEmpty", err)
	}
	if err := KillTree(t.Context(), s.root, Options{Container: o}); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

// OpenContainer never acts on a cgroup or unit runbox could not have
// made: a hierarchy's root, a path outside cgroupfs, a relative or
// unclean path, a unit of another name. Breaks if a corrupted record
// could point cgroup.kill at the host.
func TestOpenContainer_RejectsForeignRefs(t *testing.T) {
	d := Detect(t.Context())
	v2 := d.Unified
	if v2 == "" {
		v2 = "/sys/fs/cgroup"
	}
	for _, tc := range []struct {
		name string
		ref  ContainerRef
	}{
		{"v2 root", ContainerRef{Mechanism: CgroupV2, V2Dir: v2}},
		{"v2 not runbox", ContainerRef{Mechanism: Hybrid, V2Dir: filepath.Join(v2, "system.slice")}},
		{"outside cgroupfs", ContainerRef{Mechanism: CgroupV2, V2Dir: "/tmp/runbox-x"}},
		{"unclean", ContainerRef{Mechanism: CgroupV2, V2Dir: v2 + "/runbox-x/../../x"}},
		{"relative", ContainerRef{Mechanism: CgroupV2, V2Dir: "runbox-x"}},
		{"v1 as v2", ContainerRef{Mechanism: CgroupV2, V2Dir: "/sys/fs/cgroup/freezer/runbox-x"}},
		{"no dirs", ContainerRef{Mechanism: Hybrid}},
		{"v1 without freezer", ContainerRef{Mechanism: CgroupV1, V1Dirs: map[string]string{"memory": "/sys/fs/cgroup/memory/runbox-x"}}},
		{"foreign unit", ContainerRef{Mechanism: SystemdScope, Unit: "sshd.service", Bus: "system"}},
		{"unknown mechanism", ContainerRef{Mechanism: SystemdScope + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := OpenContainer(t.Context(), tc.ref); err == nil {
				t.Errorf("OpenContainer(%+v) = %v; want an error", tc.ref, c.Ref())
			}
		})
	}
}

// A process-group container's ref names its leader, so the reopened
// container finds the same group.
func TestOpenContainer_ProcessGroup(t *testing.T) {
	c := NewGroupContainer()
	s := start(t, spec{helper: "nohup", c: c})
	o := reopen(t, c)
	got, err := o.Procs()
	if err != nil || len(got) != 2 || !slices.Contains(got, s.root.PID) {
		t.Fatalf("reopened Procs() = %v, %v; want the leader %d and its child", got, err, s.root.PID)
	}
	if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: o}); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	assertGone(t, s.all()...)
}

// cgroupMechanism is the strongest usable cgroup mechanism here, or skips.
func cgroupMechanism(t *testing.T) Mechanism {
	t.Helper()
	d := Detect(t.Context())
	i := slices.IndexFunc(d.Usable, func(m Mechanism) bool { return m == CgroupV2 || m == Hybrid || m == CgroupV1 })
	if i < 0 {
		integration.Skip(t, "%s", "needs a cgroup mechanism: "+d.String())
	}
	return d.Usable[i]
}

// With a memory limit on a host whose memory controller is cgroup v1, the
// container is one of runbox's own cgroups, not a systemd scope, so an OOM
// kill is reported (see preferred). Without a memory limit the scope stays
// first.
func TestNewContainer_MemoryLimitAvoidsV1Scope(t *testing.T) {
	d := Detect(t.Context())
	if !d.Can(SystemdScope) || d.V1["memory"] == "" {
		t.Skip("needs systemd and a v1 memory controller (the systemd container of scripts/systemd)")
	}
	c, err := NewContainer(t.Context(), fmt.Sprintf("test-%d-memv1", os.Getpid()), envs.Limits{MemoryBytes: 64 << 20}, WithDetection(d))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	if c.Mechanism() == SystemdScope {
		t.Fatalf("memory-limited container is a systemd scope on a v1 memory host")
	}
	c2, err := NewContainer(t.Context(), fmt.Sprintf("test-%d-nolimit", os.Getpid()), envs.Limits{}, WithDetection(d))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Remove(context.Background())
	if c2.Mechanism() != SystemdScope {
		t.Errorf("unlimited container is %v; want a systemd scope", c2.Mechanism())
	}
}

// assertRemoved checks that KillTree removed c's cgroups.
func assertRemoved(t *testing.T, c Container) {
	t.Helper()
	for _, dir := range containerDirs(c) {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s still exists after KillTree (%v)", dir, err)
		}
	}
}

// A cgroup removed while its cgroup.procs is being read answers ENODEV,
// not ENOENT (a job's cgroup removed by its supervisor while a session's
// teardown listed it did so in CI). The kernel gives the error here: the
// file is opened, the cgroup removed, then the file read. Breaks if
// cgroupGone stops counting that answer as an empty cgroup, which made
// teardown fail with "no such device".
func TestCgroupGone_RemovedWhileOpen(t *testing.T) {
	c := newTestContainer(t, cgroupMechanism(t), envs.Limits{})
	cc := c.(*cgroupContainer)
	dir := cc.v2dir
	if dir == "" {
		dir = cc.v1dirs["freezer"]
	}
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.Remove(t.Context()); err != nil {
		t.Fatalf("Remove of an empty cgroup: %v", err)
	}
	_, err = f.Read(make([]byte, 64))
	if err == nil || !cgroupGone(err) {
		t.Fatalf("reading cgroup.procs of a removed cgroup = %v; want an error cgroupGone accepts", err)
	}
	if pids, err := c.Procs(); err != nil || len(pids) != 0 {
		t.Fatalf("Procs() of a removed cgroup = %v, %v; want none, nil", pids, err)
	}
	if err := c.Kill(t.Context()); err != nil {
		t.Fatalf("Kill of a removed cgroup: %v", err)
	}
}
