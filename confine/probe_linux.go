package confine

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Probe reports which layers the kernel gives to commands this process
// would start. It makes no change to this process.
func Probe() Report {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	r := Report{LandlockABI: abi}
	add := func(name string, s State, reason string) {
		r.Layers = append(r.Layers, Layer{Name: name, State: s, Reason: reason})
	}
	switch {
	case abi < 1:
		add(LayerFiles, Unsupported, fmt.Sprintf("no Landlock (%v)", err))
	case abi < 2:
		add(LayerFiles, Degraded, "Landlock ABI 1: files cannot be moved or linked between directories, even in the workspace")
	case abi < 3:
		add(LayerFiles, Degraded, "Landlock ABI 2: truncating a file outside the workspace is not stopped")
	default:
		add(LayerFiles, Active, fmt.Sprintf("Landlock ABI %d", abi))
	}
	if abi < 1 {
		add(LayerPtrace, Unsupported, "no Landlock to scope ptrace and /proc/PID/mem")
	} else {
		add(LayerPtrace, Active, "Landlock: no ptrace or /proc/PID/mem of processes outside the sandbox")
	}
	if _, err := lastCap(); err != nil {
		add(LayerProcesses, Unsupported, err.Error())
	} else {
		add(LayerProcesses, Active, "no_new_privs, empty capability bounding set")
	}
	if abi < 6 {
		add(LayerSignals, Degraded, fmt.Sprintf("Landlock ABI %d has no signal scoping (6 needed): signals follow the usual uid rules", abi))
	} else {
		add(LayerSignals, Active, "Landlock scopes: no signals or abstract sockets outside the sandbox")
	}
	switch {
	case !seccompAvailable():
		add(LayerNetwork, Unsupported, "no seccomp filter support")
	case auditArch == 0:
		add(LayerNetwork, Unsupported, "no seccomp filter for this architecture")
	case abi < 4:
		add(LayerNetwork, Degraded, fmt.Sprintf("Landlock ABI %d has no TCP port rules (4 needed): only network off and open", abi))
	default:
		add(LayerNetwork, Active, "seccomp: no UDP or raw sockets, no io_uring; Landlock: TCP connect to allowed ports only")
	}
	if why := ownServersMissing(); abi < 4 || why != "" {
		add(LayerOwnServers, Degraded, cmp.Or(why, "no TCP port rules")+": a command reaches its own loopback servers only on allowed ports, and allowed ports on every address")
	} else {
		add(LayerOwnServers, Active, "seccomp user notification: a command reaches its own loopback servers, allowed ports on loopback only, and unix sockets in its writable directories or listed in sandbox.unix_sockets only")
	}
	if hasCap(unix.CAP_SYS_ADMIN) {
		add(LayerMountNS, Active, "private mount namespace: everything outside the writable roots read-only (no chmod, chown, utimes or xattrs there), .git/hooks and .git/config read-only")
	} else {
		add(LayerMountNS, Degraded, "needs root: chmod, chown, utimes and xattrs of your own files outside the writable roots are not refused, and .git/hooks and .git/config of the workspace stay writable while a command runs (what it leaves for git is still made inert when it ends)")
	}
	return r
}

// ownServersMissing says what the kernel lacks for runbox to decide a
// command's connects ("" when nothing): seccomp user notifications,
// pidfd_getfd, and the right to read a command's memory (Yama's
// ptrace_scope below 2).
func ownServersMissing() string {
	var sizes [3]uint16
	const seccompGetNotifSizes = 3
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, seccompGetNotifSizes, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
		return fmt.Sprintf("no seccomp user notification (%v)", e)
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Sprintf("no pidfd (%v)", err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
	if err != nil {
		return fmt.Sprintf("no pidfd_getfd (%v)", err)
	}
	unix.Close(fd)
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		if scope := strings.TrimSpace(string(b)); scope != "0" && scope != "1" {
			return "Yama ptrace_scope " + scope
		}
	}
	return ""
}

// seccompAvailable reports whether the kernel has seccomp filters.
func seccompAvailable() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "\nSeccomp_filters:") || strings.Contains(string(b), "\nSeccomp:")
}
