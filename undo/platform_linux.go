package undo

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cloneFile makes dst share src's blocks (FICLONE): on btrfs, xfs and
// other filesystems with reflinks a copy then costs no space until one
// side is written. Elsewhere it fails and the caller copies.
func cloneFile(dst, src int) error { return unix.IoctlFileClone(dst, src) }

// mkfifoat makes a named pipe in the directory open as dirfd; the name
// is never resolved through a link.
func mkfifoat(dirfd int, name string, mode uint32) error {
	return unix.Mkfifoat(dirfd, name, mode)
}

// procStart is when process pid started, in clock ticks since boot
// (field 22 of /proc/pid/stat), or 0 when it cannot be read. A pid with a
// different start time is another process that reused the number.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 { // fields 3..22
		return 0
	}
	n, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// exchange swaps the files a and b name, atomically (both must exist).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
