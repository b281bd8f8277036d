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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// Sizes of the job measurements.
const (
	// benchThroughputBytes is the output of one jobs.throughput run.
	benchThroughputBytes = 32 << 20
	// benchIdleWindow is how long jobs.idle watches the CPU, with and
	// without the jobs.
	benchIdleWindow = 2 * time.Second
	// benchCleanupTimeout bounds the teardown of a bench's jobs; it is not
	// cut short by Ctrl-C, which is what starts it.
	benchCleanupTimeout = 5 * time.Minute
)

// benchJobCases are the background-job measurements of `runbox bench`:
//
//   - jobs.throughput: bytes of output per second into a job's log while
//     the registry follows it (a watch pattern makes it read every byte),
//     against `cat` of the same bytes to /dev/null;
//   - jobs.idle: CPU milliseconds per second of the registry (this
//     process) with --scale idle jobs (20 by default), against the same
//     registry with none. per_job_pss_kib is what one idle job adds in
//     memory apart from its own command: the PSS of the supervisor
//     processes (the host, shared by all jobs, or one each where no
//     container can be made) and of their children (each job's wrapper,
//     a PTY job's copier), over the number of jobs. The note repeats it
//     and gives the heap, the RSS, the supervisors' RSS and the CPU the
//     supervisors used meanwhile.
func benchJobCases(a *app) []benchCase {
	return []benchCase{
		{name: "jobs.throughput", backend: "local", baseline: "cat to /dev/null", n: 3, maxN: 10,
			custom: func(ctx context.Context, p benchParams) (measurement, error) {
				return benchJobThroughput(ctx, a, p, benchThroughputBytes)
			}},
		{name: "jobs.idle", backend: "local", baseline: "registry with no jobs", n: 1, scale: 20,
			custom: func(ctx context.Context, p benchParams) (measurement, error) {
				return benchJobIdle(ctx, a, p, benchIdleWindow)
			}},
	}
}

// benchRegistry opens a registry in a fresh temporary state dir. Its
// cleanup kills every job still running, closes the registry and removes
// the directory; it runs to the end even when ctx has ended.
func benchRegistry(a *app, prog *benchProgress) (*procregistry.Registry, func(), error) {
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
		killBenchJobs(reg, prog)
		reg.Close()
		env.Close(context.Background())
		// The supervisor host exits a moment after its last job: nothing
		// of the bench is left running once it returns.
		ctx, cancel := context.WithTimeout(context.Background(), benchCleanupTimeout)
		reg.WaitHostGone(ctx)
		cancel()
		os.RemoveAll(dir)
	}, nil
}

// killBenchJobs kills every job of reg that still runs, a few at a time:
// a kill mostly waits (for the tree to go), so kills overlap well.
func killBenchJobs(reg *procregistry.Registry, prog *benchProgress) {
	var ids []string
	for _, in := range reg.List("") {
		if !in.Status.Finished() {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	prog.say("  stopping %d jobs", len(ids))
	ctx, cancel := context.WithTimeout(context.Background(), benchCleanupTimeout)
	defer cancel()
	work := make(chan string)
	var killed atomic.Int64
	var wg sync.WaitGroup
	for range min(len(ids), 4*runtime.NumCPU()) {
		wg.Go(func() {
			for id := range work {
				reg.Kill(ctx, id)
				prog.step("stopped", int(killed.Add(1)), len(ids))
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

func benchJobThroughput(ctx context.Context, a *app, p benchParams, size int64) (measurement, error) {
	reg, cleanup, err := benchRegistry(a, p.progress)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x | fold -w 99", size)
	var ops, bases []time.Duration
	for i := range p.n {
		if err := ctx.Err(); err != nil {
			return measurement{}, err
		}
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
		p.progress.step("runs", i+1, p.n)
	}
	p50 := quantile(ops, 0.5)
	return measurement{
		Name: "jobs.throughput", Backend: "local", N: p.n,
		P50ms: p50, P99ms: quantile(ops, 0.99), Baseline: "cat to /dev/null", BaselineP50ms: quantile(bases, 0.5),
		PerSecond: float64(size) / (p50 / 1000),
		Note:      fmt.Sprintf("%d MiB per run (fold adds newlines); per_second is bytes/s", size>>20),
	}, nil
}

func benchJobIdle(ctx context.Context, a *app, p benchParams, window time.Duration) (measurement, error) {
	reg, cleanup, err := benchRegistry(a, p.progress)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	base := cpuMillisPerSecond(ctx, window)
	p.progress.say("  starting %d idle jobs", p.scale)
	var sups []int
	for i := range p.scale {
		if err := ctx.Err(); err != nil {
			return measurement{}, err
		}
		in, err := reg.Start(ctx, procregistry.StartRequest{Shell: "exec sleep 3600", Owner: "bench", Heartbeat: time.Minute, Watch: []string{"x"}})
		if err != nil {
			return measurement{}, fmt.Errorf("job %d: %w", i, err)
		}
		if in.Status != procregistry.StatusRunning {
			return measurement{}, fmt.Errorf("job %d: %s: %s", i, in.Status, in.Error)
		}
		sups = append(sups, in.SupervisorPID)
		p.progress.step("started", i+1, p.scale)
	}
	supCPU0 := ticksOf(distinctPIDs(sups))
	busy := cpuMillisPerSecond(ctx, window)
	supCPU := ticksOf(distinctPIDs(sups)) - supCPU0
	if err := ctx.Err(); err != nil {
		return measurement{}, err
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var supRSS, supPSS, childPSS int64
	distinct := distinctPIDs(sups)
	for _, pid := range distinct {
		supRSS += memOf(pid, "status", "VmRSS:")
		supPSS += memOf(pid, "smaps_rollup", "Pss:")
		for _, c := range childrenOf(pid) {
			childPSS += memOf(c, "smaps_rollup", "Pss:")
		}
	}
	perJob := float64(supPSS+childPSS) / float64(max(p.scale, 1)) / 1024
	shape := "one supervisor host for all jobs"
	if len(distinct) > 1 {
		shape = "no container here, so each job has a supervisor of its own (its subreaper), as the host cannot be one per job"
	}
	return measurement{
		Name: "jobs.idle", Backend: "local", N: p.scale,
		P50ms: busy, P99ms: busy, Baseline: "registry with no jobs", BaselineP50ms: base,
		PerJobPSSKiB: perJob,
		Note: fmt.Sprintf("p50_ms = registry CPU ms per second with %d idle jobs; per idle job %.0f KiB PSS beside its command (%s: %d supervisor processes, %.1f MiB PSS, %.1f MiB RSS; their children, the wrappers: %.1f MiB PSS); supervisors' CPU meanwhile %d ticks in all; heap %.1f MiB, registry RSS %.1f MiB",
			p.scale, perJob, shape, len(distinct), float64(supPSS)/(1<<20), float64(supRSS)/(1<<20), float64(childPSS)/(1<<20),
			supCPU, float64(ms.HeapInuse)/(1<<20), float64(memOf(os.Getpid(), "status", "VmRSS:"))/(1<<20)),
	}, nil
}

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
