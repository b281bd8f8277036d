// Leaving the containers of runbox commands: what a command starts to
// outlive it (a job daemon) moves out of the command's cgroups or scope.

package termination

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/runbox/runbox/envs"
)

// Leave moves process pid out of every runbox container it is in (the
// cgroups or systemd scope of a runbox command, and of runbox commands
// that started that one), so that tearing those down no longer reaches
// it. It reports whether pid was in one.
//
// A process in a runbox scope gets a transient scope of its own,
// runbox-<id>.scope, from the same systemd manager. A process in runbox
// cgroups goes, in each hierarchy, to the nearest cgroup above them that
// is not runbox's: the cgroup of whatever made the first runbox container
// there. Where cgroup v2 refuses that (the cgroup has controllers enabled
// for its children, so it may hold no process), it goes to a child of
// that cgroup named runbox-<id> instead, created if missing and left
// behind empty when the process ends.
func Leave(ctx context.Context, pid int, id string) (bool, error) {
	if err := validID(id); err != nil {
		return false, err
	}
	lines, err := cgroupsOf(pid)
	if err != nil {
		return false, err
	}
	var in []procCgroup
	for _, l := range lines {
		if _, ok := outsideRunbox(l.path); ok {
			in = append(in, l)
		}
	}
	if len(in) == 0 {
		return false, nil
	}
	if slices.ContainsFunc(in, func(l procCgroup) bool { return runboxScope(l.path) }) {
		s, err := newScope(ctx, id, envs.Limits{}, Detection{})
		if err != nil {
			return true, fmt.Errorf("termination: leave the scope of %d: %w", pid, err)
		}
		defer s.conn.Close()
		if err := s.Add(ctx, pid); err != nil {
			return true, fmt.Errorf("termination: leave the scope of %d: %w", pid, err)
		}
		return true, nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return true, err
	}
	// v2 first: it holds membership and kill where both kinds are used.
	slices.SortStableFunc(in, func(a, b procCgroup) int {
		switch {
		case a.v2() == b.v2():
			return 0
		case a.v2():
			return -1
		}
		return 1
	})
	var errs []error
	for _, l := range in {
		i := slices.IndexFunc(mounts, l.mountedAt)
		if i < 0 {
			continue // a hierarchy runbox does not use (name=systemd without systemd)
		}
		above, _ := outsideRunbox(l.path)
		dir := dirIn(mounts[i], above)
		err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pid))
		if err != nil && l.v2() && errors.Is(err, syscall.EBUSY) {
			leaf := filepath.Join(dir, "runbox-"+id)
			if err = os.Mkdir(leaf, 0o755); err == nil || errors.Is(err, os.ErrExist) {
				err = writeCgroupFile(leaf, "cgroup.procs", strconv.Itoa(pid))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("termination: move %d out of %s: %w", pid, l.path, err))
		}
	}
	return true, errors.Join(errs...)
}

// procCgroup is one line of /proc/PID/cgroup.
type procCgroup struct {
	ctrls []string // v1 controllers, or "name=..." ; empty for v2
	path  string
}

func (l procCgroup) v2() bool { return len(l.ctrls) == 0 }

// mountedAt reports whether m is the mount of l's hierarchy.
func (l procCgroup) mountedAt(m mount) bool {
	if l.v2() {
		return m.v2
	}
	return !m.v2 && slices.ContainsFunc(l.ctrls, func(c string) bool { return slices.Contains(m.ctrls, c) })
}

// cgroupsOf reads /proc/PID/cgroup.
func cgroupsOf(pid int) ([]procCgroup, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("termination: cgroups of %d: %w", pid, err)
	}
	var out []procCgroup
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		l := procCgroup{path: parts[2]}
		if parts[1] != "" {
			l.ctrls = strings.Split(parts[1], ",")
		}
		out = append(out, l)
	}
	return out, nil
}

// outsideRunbox cuts path before its first runbox cgroup (a component
// named runbox-*), and reports whether it has one.
func outsideRunbox(path string) (string, bool) {
	parts := strings.Split(path, "/")
	i := slices.IndexFunc(parts, func(p string) bool { return strings.HasPrefix(p, "runbox-") })
	if i < 0 {
		return path, false
	}
	above := strings.Join(parts[:i], "/")
	if above == "" {
		above = "/"
	}
	return above, true
}

// runboxScope reports whether path runs through a runbox systemd scope.
func runboxScope(path string) bool {
	return slices.ContainsFunc(strings.Split(path, "/"), func(p string) bool {
		return strings.HasPrefix(p, "runbox-") && strings.HasSuffix(p, ".scope")
	})
}
