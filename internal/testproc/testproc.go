// Package testproc holds what runbox's own tests need to clean up after
// themselves: job daemons that a test started through runbox (which
// starts them detached, on purpose) are found and stopped when the test
// binary ends, so no test leaves a process behind.
package testproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// StopDaemons stops every `EXE __daemon` process whose argv[0] is exe:
// SIGTERM, up to five seconds, then SIGKILL. exe is the binary the tests
// ran as runbox (the test binary itself, or one they built), so nothing
// else is touched.
func StopDaemons(exe string) {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		if len(args) >= 2 && string(args[0]) == exe && string(args[1]) == "__daemon" {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // bounded: the deadline above
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
