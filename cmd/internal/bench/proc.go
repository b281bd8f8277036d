package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the job measurements read of processes, from /proc and getrusage:
// a missing process or field reads as nothing (a job may end while it is
// read), never as an error.

// distinctPIDs is pids without repeats (jobs share the supervisor host).
func distinctPIDs(pids []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, pid := range pids {
		if pid > 0 && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists the children of pid from /proc.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// cpuMillisPerSecond is this process's CPU time (user+system) per second
// of wall time over window.
func cpuMillisPerSecond(ctx context.Context, window time.Duration) float64 {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, t0 := cpu(), time.Now()
	t := time.NewTimer(window)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	return float64((cpu() - c0).Microseconds()) / 1000 / time.Since(t0).Seconds()
}

// ticksOf sums the CPU time (utime+stime, clock ticks) of pids.
func ticksOf(pids []int) int {
	total := 0
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		total += ut + st
	}
	return total
}

// memOf reads a kB field of /proc/PID/file in bytes (0 if absent).
func memOf(pid int, file, field string) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
