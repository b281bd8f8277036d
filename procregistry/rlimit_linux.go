//go:build linux

package procregistry

import (
	"fmt"
	"syscall"
	"unsafe"
)

// RaiseFileLimit raises this process's soft limit of open files
// (RLIMIT_NOFILE) to just below its hard limit, for a long-lived server
// whose connections and job logs each take a descriptor. It is meant for
// a daemon's start; it is a no-op when the limit is that high already
// (the Go runtime raises it itself at start unless that failed).
//
// It uses the raw prlimit64 system call on purpose: syscall.Setrlimit
// and x/sys's Prlimit tell os/exec to stop giving children the original
// soft limit, and the jobs a daemon starts should keep the limit their
// user set, not the daemon's. The value (hard - 1) is the one the Go
// runtime uses, which is how os/exec recognises that it may restore the
// original in a child.
func RaiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("procregistry: open file limit: %w", err)
	}
	if lim.Max == 0 || lim.Cur >= lim.Max-1 {
		return nil
	}
	nlim := syscall.Rlimit{Cur: lim.Max - 1, Max: lim.Max}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, syscall.RLIMIT_NOFILE,
		uintptr(unsafe.Pointer(&nlim)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("procregistry: raise the open file limit to %d: %w", nlim.Cur, errno)
	}
	return nil
}
