package testproc

import (
	"bytes"
	"os"
	"strconv"
)

// stat is the part of /proc/PID/stat after the command name: the name
// is in parentheses and may itself hold spaces or parentheses, so the
// fields start after the last ')'. ok is false when pid is gone.
func stat(pid int) (fields [][]byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	return bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:]), true
}

// Parent is pid's parent process id, or 0 when pid is gone.
func Parent(pid int) int {
	f, ok := stat(pid)
	if !ok || len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// Alive reports whether pid runs: it exists and is not a zombie that
// its parent has not reaped yet.
func Alive(pid int) bool {
	f, ok := stat(pid)
	return ok && (len(f) == 0 || string(f[0]) != "Z")
}
