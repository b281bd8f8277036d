// Host detection: the cgroup mounts of this mount namespace, this process's own cgroups, and what runbox may create where.

package termination

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/internal/mountinfo"
)

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
		m := mount{point: mountinfo.Unescape(f[4]), root: mountinfo.Unescape(f[3]), v2: fstype == "cgroup2"}
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
// looks at dir, at the kernel release and, for an older release (which a
// distribution may have given the file), at the root's children: a host
// may hold thousands of them, and this runs on every capability probe.
func killSupported(unified, dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err == nil {
		return true
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		var major, minor int
		fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
		if major > 5 || major == 5 && minor >= 14 {
			return true
		}
	}
	ents, _ := os.ReadDir(unified)
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(unified, e.Name(), "cgroup.kill")); err == nil {
				return true
			}
		}
	}
	return false
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
