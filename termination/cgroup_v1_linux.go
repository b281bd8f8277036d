// cgroup v1: the controllers runbox uses, their limits, and the freezer that pins a tree for its kill.

package termination

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runbox/runbox/envs"
)

// v1Controllers are the cgroup v1 controllers runbox uses.
var v1Controllers = []string{"freezer", "pids", "memory", "cpu"}

// v1Wanted lists the v1 controllers a container of mechanism m needs:
// the freezer (CgroupV1's membership and kill) and one per limit set.
func v1Wanted(m Mechanism, l envs.Limits) []string {
	var want []string
	if m == CgroupV1 {
		want = append(want, "freezer")
	}
	if l.MemoryBytes > 0 {
		want = append(want, "memory")
	}
	if l.Pids > 0 {
		want = append(want, "pids")
	}
	if l.CPUs > 0 {
		want = append(want, "cpu")
	}
	return want
}

// v1Limits are the control files that set the limits of controller ctrl
// in its v1 cgroup, in the order they must be written (the CFS period
// before the quota; the memory limit before the memory+swap limit, which
// may not be below it). Without swap accounting there is no
// memory.memsw.limit_in_bytes, which is fine.
func v1Limits(ctrl string, l envs.Limits) []limitFile {
	switch ctrl {
	case "memory":
		n := strconv.FormatInt(l.MemoryBytes, 10)
		return []limitFile{
			{ctrl: ctrl, name: "memory.limit_in_bytes", value: n},
			{ctrl: ctrl, name: "memory.memsw.limit_in_bytes", value: n, optional: true},
		}
	case "pids":
		return []limitFile{{ctrl: ctrl, name: "pids.max", value: strconv.FormatInt(l.Pids, 10)}}
	case "cpu":
		return []limitFile{
			{ctrl: ctrl, name: "cpu.cfs_period_us", value: strconv.Itoa(cpuPeriod)},
			{ctrl: ctrl, name: "cpu.cfs_quota_us", value: strconv.FormatInt(int64(l.CPUs*cpuPeriod), 10)},
		}
	}
	return nil
}

// freezeWait bounds how long a v1 freezer may take to reach a state.
const freezeWait = 5 * time.Second

// killFrozen SIGKILLs every process of the v1 freezer cgroup dir (and the
// cgroups below it) while it is frozen.
func killFrozen(dir string) error {
	if err := setFreezer(dir, "FROZEN"); err != nil {
		if cgroupGone(err) {
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
	if err := setFreezer(dir, "THAWED"); err != nil && !cgroupGone(err) {
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
