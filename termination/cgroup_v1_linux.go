// cgroup v1: the controllers runbox uses, their limits, and the freezer that pins a tree for its kill.

package termination

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runbox/runbox/envs"
)

// v1Controllers are the cgroup v1 controllers runbox uses.
var v1Controllers = []string{"freezer", "pids", "memory", "cpu"}

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
