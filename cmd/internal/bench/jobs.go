package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// Sizes of the job measurements.
const (
	// throughputBytes is the output of one jobs.throughput run.
	throughputBytes = 32 << 20
	// idleWindow is how long jobs.idle watches the CPU, with and without
	// the jobs.
	idleWindow = 2 * time.Second
	// cleanupTimeout bounds the teardown of a bench's jobs; it is not cut
	// short by Ctrl-C, which is what starts it.
	cleanupTimeout = 5 * time.Minute
)

// jobCases are the background-job measurements:
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
func jobCases(h Host) []caseDef {
	return []caseDef{
		{name: "jobs.throughput", backend: "local", baseline: "cat to /dev/null", n: 3, maxN: 10,
			custom: func(ctx context.Context, p params) (Measurement, error) {
				return jobThroughput(ctx, h, p, throughputBytes)
			}},
		{name: "jobs.idle", backend: "local", baseline: "registry with no jobs", n: 1, scale: 20,
			custom: func(ctx context.Context, p params) (Measurement, error) {
				return jobIdle(ctx, h, p, idleWindow)
			}},
	}
}

// openRegistry opens a registry in a fresh temporary state dir. Its
// cleanup kills every job still running, closes the registry and removes
// the directory; it runs to the end even when ctx has ended.
func openRegistry(h Host, prog *progress) (*procregistry.Registry, func(), error) {
	if h.OpenRegistry == nil {
		return nil, nil, errors.New("bench: no job registry to measure (Host.OpenRegistry is nil)")
	}
	dir, err := os.MkdirTemp("", "runbox-bench-jobs-*")
	if err != nil {
		return nil, nil, err
	}
	reg, env, err := h.OpenRegistry(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return reg, func() {
		killJobs(reg, prog)
		reg.Close()
		env.Close(context.Background())
		// The supervisor host exits a moment after its last job: nothing
		// of the bench is left running once it returns.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		reg.WaitHostGone(ctx)
		cancel()
		os.RemoveAll(dir)
	}, nil
}

// killJobs kills every job of reg that still runs, a few at a time: a
// kill mostly waits (for the tree to go), so kills overlap well.
func killJobs(reg *procregistry.Registry, prog *progress) {
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
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
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

func jobThroughput(ctx context.Context, h Host, p params, size int64) (Measurement, error) {
	reg, cleanup, err := openRegistry(h, p.progress)
	if err != nil {
		return Measurement{}, err
	}
	defer cleanup()
	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x | fold -w 99", size)
	var ops, bases []time.Duration
	for i := range p.n {
		if err := ctx.Err(); err != nil {
			return Measurement{}, err
		}
		t0 := time.Now()
		in, err := reg.Start(ctx, procregistry.StartRequest{Shell: gen, Owner: "bench", Watch: []string{"^never matches$"}})
		if err != nil {
			return Measurement{}, err
		}
		if _, done, err := reg.Wait(ctx, in.ID, 10*time.Minute); err != nil || !done {
			return Measurement{}, fmt.Errorf("job did not finish: %v", err)
		}
		ops = append(ops, time.Since(t0))
		t0 = time.Now()
		if err := exec.CommandContext(ctx, "bash", "-c", gen+" | cat > /dev/null").Run(); err != nil {
			return Measurement{}, fmt.Errorf("baseline: %w", err)
		}
		bases = append(bases, time.Since(t0))
		p.progress.step("runs", i+1, p.n)
	}
	p50 := quantile(ops, 0.5)
	return Measurement{
		Name: "jobs.throughput", Backend: "local", N: p.n,
		P50ms: p50, P99ms: quantile(ops, 0.99), Baseline: "cat to /dev/null", BaselineP50ms: quantile(bases, 0.5),
		PerSecond: float64(size) / (p50 / 1000),
		Note:      fmt.Sprintf("%d MiB per run (fold adds newlines); per_second is bytes/s", size>>20),
	}, nil
}

func jobIdle(ctx context.Context, h Host, p params, window time.Duration) (Measurement, error) {
	reg, cleanup, err := openRegistry(h, p.progress)
	if err != nil {
		return Measurement{}, err
	}
	defer cleanup()
	base := cpuMillisPerSecond(ctx, window)
	sups, err := startIdleJobs(ctx, reg, p)
	if err != nil {
		return Measurement{}, err
	}
	supCPU0 := ticksOf(distinctPIDs(sups))
	busy := cpuMillisPerSecond(ctx, window)
	supCPU := ticksOf(distinctPIDs(sups)) - supCPU0
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	return idleMeasurement(p.scale, base, busy, distinctPIDs(sups), supCPU), nil
}

// startIdleJobs starts p.scale jobs that sleep, and returns their
// supervisors' PIDs.
func startIdleJobs(ctx context.Context, reg *procregistry.Registry, p params) ([]int, error) {
	p.progress.say("  starting %d idle jobs", p.scale)
	var sups []int
	for i := range p.scale {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in, err := reg.Start(ctx, procregistry.StartRequest{Shell: "exec sleep 3600", Owner: "bench", Heartbeat: time.Minute, Watch: []string{"x"}})
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		if in.Status != procregistry.StatusRunning {
			return nil, fmt.Errorf("job %d: %s: %s", i, in.Status, in.Error)
		}
		sups = append(sups, in.SupervisorPID)
		p.progress.step("started", i+1, p.scale)
	}
	return sups, nil
}

// idleMeasurement is jobs.idle's line: the registry's CPU with jobs
// (busy) and without (base), and the memory of the supervisors sups and
// their children, who used supCPU ticks meanwhile.
func idleMeasurement(jobs int, base, busy float64, sups []int, supCPU int) Measurement {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var supRSS, supPSS, childPSS int64
	for _, pid := range sups {
		supRSS += memOf(pid, "status", "VmRSS:")
		supPSS += memOf(pid, "smaps_rollup", "Pss:")
		for _, c := range childrenOf(pid) {
			childPSS += memOf(c, "smaps_rollup", "Pss:")
		}
	}
	perJob := float64(supPSS+childPSS) / float64(max(jobs, 1)) / 1024
	shape := "one supervisor host for all jobs"
	if len(sups) > 1 {
		shape = "no container here, so each job has a supervisor of its own (its subreaper), as the host cannot be one per job"
	}
	return Measurement{
		Name: "jobs.idle", Backend: "local", N: jobs,
		P50ms: busy, P99ms: busy, Baseline: "registry with no jobs", BaselineP50ms: base,
		PerJobPSSKiB: perJob,
		Note: fmt.Sprintf("p50_ms = registry CPU ms per second with %d idle jobs; per idle job %.0f KiB PSS beside its command (%s: %d supervisor processes, %.1f MiB PSS, %.1f MiB RSS; their children, the wrappers: %.1f MiB PSS); supervisors' CPU meanwhile %d ticks in all; heap %.1f MiB, registry RSS %.1f MiB",
			jobs, perJob, shape, len(sups), float64(supPSS)/(1<<20), float64(supRSS)/(1<<20), float64(childPSS)/(1<<20),
			supCPU, float64(ms.HeapInuse)/(1<<20), float64(memOf(os.Getpid(), "status", "VmRSS:"))/(1<<20)),
	}
}
