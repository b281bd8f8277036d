package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// benchJobCases are the background-job measurements of `runbox bench`:
//
//   - jobs.throughput: bytes of output per second into a job's log while
//     the registry follows it (a watch pattern makes it read every byte),
//     against `cat` of the same bytes to /dev/null;
//   - jobs.idle: CPU milliseconds per second and memory of the registry
//     (this process) with 1,000 idle jobs, against the same registry with
//     none. The note gives the heap, the RSS, and the supervisors' RSS.
func benchJobCases(a *app) []benchCase {
	return []benchCase{
		{name: "jobs.throughput", backend: "local", baseline: "cat to /dev/null",
			custom: func(ctx context.Context, n int) (measurement, error) {
				return benchJobThroughput(ctx, a, 256<<20, min(n, 3))
			}},
		{name: "jobs.idle", backend: "local", baseline: "registry with no jobs",
			custom: func(ctx context.Context, n int) (measurement, error) {
				return benchJobIdle(ctx, a, 1000, 3*time.Second)
			}},
	}
}

// benchRegistry opens a registry in a fresh temporary state dir.
func benchRegistry(a *app) (*procregistry.Registry, func(), error) {
	dir, err := os.MkdirTemp("", "runbox-bench-jobs-*")
	if err != nil {
		return nil, nil, err
	}
	reg, env, err := a.openRegistry(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return reg, func() {
		for _, in := range reg.List("") {
			if !in.Status.Finished() {
				reg.Kill(context.Background(), in.ID)
			}
		}
		reg.Close()
		env.Close(context.Background())
		os.RemoveAll(dir)
	}, nil
}

func benchJobThroughput(ctx context.Context, a *app, size int64, runs int) (measurement, error) {
	reg, cleanup, err := benchRegistry(a)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x | fold -w 99", size)
	var ops, bases []time.Duration
	for range runs {
		t0 := time.Now()
		in, err := reg.Start(ctx, procregistry.StartRequest{Shell: gen, Owner: "bench", Watch: []string{"^never matches$"}})
		if err != nil {
			return measurement{}, err
		}
		if _, done, err := reg.Wait(ctx, in.ID, 10*time.Minute); err != nil || !done {
			return measurement{}, fmt.Errorf("job did not finish: %v", err)
		}
		ops = append(ops, time.Since(t0))
		t0 = time.Now()
		if err := exec.CommandContext(ctx, "bash", "-c", gen+" | cat > /dev/null").Run(); err != nil {
			return measurement{}, fmt.Errorf("baseline: %w", err)
		}
		bases = append(bases, time.Since(t0))
	}
	p50 := quantile(ops, 0.5)
	return measurement{
		Name: "jobs.throughput", Backend: "local", N: runs,
		P50ms: p50, P99ms: quantile(ops, 0.99), Baseline: "cat to /dev/null", BaselineP50ms: quantile(bases, 0.5),
		PerSecond: float64(size) / (p50 / 1000),
		Note:      fmt.Sprintf("%d MiB per run (fold adds newlines); per_second is bytes/s", size>>20),
	}, nil
}

func benchJobIdle(ctx context.Context, a *app, jobs int, window time.Duration) (measurement, error) {
	reg, cleanup, err := benchRegistry(a)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	base := cpuMillisPerSecond(ctx, window)
	for i := range jobs {
		if _, err := reg.Start(ctx, procregistry.StartRequest{Shell: "exec sleep 3600", Owner: "bench", Heartbeat: time.Minute, Watch: []string{"x"}}); err != nil {
			return measurement{}, fmt.Errorf("job %d: %w", i, err)
		}
	}
	busy := cpuMillisPerSecond(ctx, window)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var supRSS, supPSS int64
	for _, in := range reg.List("bench") {
		sup := supervisorPID(in.PID)
		supRSS += memOf(sup, "status", "VmRSS:")
		supPSS += memOf(sup, "smaps_rollup", "Pss:")
	}
	return measurement{
		Name: "jobs.idle", Backend: "local", N: jobs,
		P50ms: busy, P99ms: busy, Baseline: "registry with no jobs", BaselineP50ms: base,
		Note: fmt.Sprintf("p50_ms = registry CPU ms per second with %d idle jobs; heap %.1f MiB, registry RSS %.1f MiB, supervisors' RSS %.1f MiB total (PSS, shared pages divided: %.1f MiB)",
			jobs, float64(ms.HeapInuse)/(1<<20), float64(memOf("self", "status", "VmRSS:"))/(1<<20), float64(supRSS)/(1<<20), float64(supPSS)/(1<<20)),
	}, nil
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

// supervisorPID is the parent of the job's command: its supervisor.
func supervisorPID(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// memOf reads a kB field of /proc/PID/file in bytes (0 if absent).
func memOf(pid, file, field string) int64 {
	if pid == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", pid, file))
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
