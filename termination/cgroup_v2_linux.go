// cgroup v2: limits and membership reads of the unified hierarchy.

package termination

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"

	"github.com/runbox/runbox/envs"
)

// cpuPeriod is the CFS period used for CPU limits, in microseconds.
const cpuPeriod = 100_000

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
