//go:build linux

package supervisor

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// trimStartup gives back the memory the host's start (and the starts of
// its jobs) touched and an idle host does not use. The host is the runbox
// binary, whose start runs every package's initialisation across tens of
// MB of code: those pages would stay mapped, and counted, for the host's
// whole life, though waiting for jobs needs a small part of them. Read-only mappings of the executable are
// dropped from this process (MADV_DONTNEED: the pages stay in the page
// cache, and come back on the next touch, from the unchanged file; a
// running executable cannot be written to), and the heap that start
// left is returned to the system.
func trimStartup() {
	// First the heap: the collection this takes touches code and tables
	// of its own, which the trim below then drops as well.
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for line := range strings.Lines(string(maps)) {
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || strings.ContainsAny(f[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
