package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the calling thread, and every program it
// executes, without capabilities: the bounding set is emptied (so a root
// command's execve grants none: no CAP_SYS_PTRACE, CAP_SYS_ADMIN,
// CAP_NET_ADMIN, CAP_DAC_OVERRIDE...), the ambient set cleared and the
// inheritable, permitted and effective sets zeroed. A thread without
// CAP_SETPCAP cannot shrink its bounding set; that is harmless when it
// holds no capability (a non-root user), since no_new_privs then keeps
// setuid and file capabilities from granting any, and an error otherwise.
// last is the highest capability number the kernel knows (lastCap).
func dropCapabilities(last int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("confine: reading capabilities: %w", err)
	}
	held := data[0].Permitted|data[1].Permitted != 0
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EPERM && !held {
				break
			}
			return fmt.Errorf("confine: dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("confine: clearing ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("confine: clearing capabilities: %w", err)
	}
	return nil
}

// lastCap is the highest capability number the kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("confine: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("confine: cap_last_cap: %w", err)
	}
	return n, nil
}

// hasCap reports whether the calling thread has capability c effective.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}
