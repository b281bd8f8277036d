// cgroup v2: limits and membership reads of the unified hierarchy.

package termination

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runbox/runbox/envs"
)

// cpuPeriod is the CFS period used for CPU limits, in microseconds.
const cpuPeriod = 100_000

// v2Limits are the control files that set limits in a cgroup2 cgroup.
// Without swap the memory limit is a hard limit; a kernel without swap
// accounting has no memory.swap.max, which is fine.
func v2Limits(l envs.Limits) []limitFile {
	var files []limitFile
	if l.MemoryBytes > 0 {
		files = append(files,
			limitFile{ctrl: "memory", name: "memory.max", value: strconv.FormatInt(l.MemoryBytes, 10)},
			limitFile{ctrl: "memory", name: "memory.swap.max", value: "0", optional: true})
	}
	if l.Pids > 0 {
		files = append(files, limitFile{ctrl: "pids", name: "pids.max", value: strconv.FormatInt(l.Pids, 10)})
	}
	if l.CPUs > 0 {
		files = append(files, limitFile{ctrl: "cpu", name: "cpu.max", value: fmt.Sprintf("%d %d", int64(l.CPUs*cpuPeriod), cpuPeriod)})
	}
	return files
}

// enableControllers makes ctrls available to the children of parent (a
// cgroup of the cgroup2 hierarchy mounted at root) by enabling them in
// cgroup.subtree_control of every cgroup from root down to parent. Only
// parent's own list decides: a write above it may be refused where the
// controller is already enabled (a delegated subtree). The kernel refuses
// the write in parent while parent itself holds processes, unless the
// controller is enabled there already.
func enableControllers(root, parent string, ctrls []string) error {
	if len(ctrls) == 0 {
		return nil
	}
	rel, err := filepath.Rel(root, parent)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("termination: cgroup %s is not under %s", parent, root)
	}
	dirs := []string{root}
	if rel != "." {
		for _, part := range strings.Split(rel, "/") {
			dirs = append(dirs, filepath.Join(dirs[len(dirs)-1], part))
		}
	}
	var last error
	for _, dir := range dirs {
		have := subtreeControllers(dir)
		for _, c := range ctrls {
			if !slices.Contains(have, c) {
				last = writeCgroupFile(dir, "cgroup.subtree_control", "+"+c)
			}
		}
	}
	have := subtreeControllers(parent)
	for _, c := range ctrls {
		if !slices.Contains(have, c) {
			return fmt.Errorf("termination: cannot enable the %s controller for the children of %s: %v", c, parent, last)
		}
	}
	return nil
}

// subtreeControllers reads the controllers enabled for dir's children.
func subtreeControllers(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	return strings.Fields(string(b))
}

// readProcsTree reads cgroup.procs of dir and every cgroup below it. A
// cgroup that is gone, or goes while it is read, is an empty one.
func readProcsTree(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if cgroupGone(err) {
				return nil
			}
			return err
		}
		if e.IsDir() || e.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if cgroupGone(err) {
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
