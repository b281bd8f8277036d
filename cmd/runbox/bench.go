package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runbox/runbox/envs"
)

type benchOptions struct {
	json  bool
	n     int // 0: each measurement's own default
	scale int // 0: each scale measurement's own default
	only  []string
	ssh   benchSSHTarget
}

// measurement is one line of `runbox bench --json` (format fixed by the
// design: tests and dashboards parse it).
type measurement struct {
	Name          string  `json:"name"`
	Backend       string  `json:"backend"`
	N             int     `json:"n"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	Baseline      string  `json:"baseline"`
	BaselineP50ms float64 `json:"baseline_p50_ms"`
	// Ratio is P50ms / BaselineP50ms: below 1 runbox beat its baseline.
	// It is 0 where there is no baseline time to compare with.
	Ratio float64 `json:"ratio,omitempty"`
	// PerSecond is set for throughput measurements (operations per second).
	PerSecond float64 `json:"per_second,omitempty"`
	// PerJobPSSKiB is set by jobs.idle: what one idle job adds in memory
	// apart from its own command (its share of the supervisor host, or
	// its own supervisor, plus its wrapper and a PTY job's copier), in KiB
	// of PSS.
	PerJobPSSKiB float64 `json:"per_job_pss_kib,omitempty"`
	// Note explains a measurement that could not be taken.
	Note string `json:"note,omitempty"`
}

// benchParams are the sizes one measurement runs with: the flags, or the
// measurement's own defaults.
type benchParams struct {
	// n is how many times the operation (and its baseline) runs.
	n int
	// scale is the size of a scale measurement (jobs.idle: how many jobs).
	scale int
	// run names this bench run; what a measurement creates outside this
	// process (docker containers) carries it, so the run can sweep it up.
	run string
	// progress reports on stderr when it is a terminal; never nil.
	progress *benchProgress
}

// benchCase measures op against baseline, each n times in the same run.
type benchCase struct {
	name, backend, baseline string
	// n is the default number of runs; maxN caps the runs of an expensive
	// case (0: no cap).
	n, maxN int
	// scale is the default size of a scale measurement (0: none). The
	// default is small, so that `runbox bench` stays quick; the published
	// numbers come from --only NAME --scale N.
	scale int
	// setup prepares the case; its cleanup runs after the measurement,
	// however it ends.
	setup func(ctx context.Context, p benchParams) (op, base func(ctx context.Context) error, cleanup func(), err error)
	// custom replaces the timed loop (throughput and scale measurements).
	// It cleans up after itself on every return.
	custom func(ctx context.Context, p benchParams) (measurement, error)
}

func newBenchCommand(a *app) *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure runbox against a plain baseline in the same run",
		Long: `Measure runbox's overheads, each against a baseline measured in the same run:
a command through the local backend versus a bare "bash -c"; the command gate's
time per command versus parsing alone, in this process and through "runbox check
--jsonl" over thousands of commands, process start included; output throughput into a background
job versus cat to /dev/null, and the cost of idle jobs; a command through the
docker backend versus "docker exec", and container creation to first command
versus "docker run -d" + "docker exec", cold and from a warm pool (when an
engine answers); a command through the ssh backend versus "ssh HOST true" and
versus "ssh -S SOCKET HOST true" through an open ControlMaster (with
--ssh-host or ssh.host); pod creation to first command and a command through
the kubernetes backend versus client-go's own pod creation and exec (with a
cluster in the kubernetes section or the kubeconfig).

The default sizes keep the whole run under a minute; -n and --scale raise them
(for example --only jobs.idle --scale 1000 for a thousand idle jobs). Ctrl-C
stops at once; every job, state directory and container the bench made is
removed on the way out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntVarP(&opts.n, "n", "n", 0, "runs per measurement and per baseline (0 = each measurement's default)")
	cmd.Flags().IntVar(&opts.scale, "scale", 0, "size of the scale measurements: idle jobs for jobs.idle (0 = the default, 20)")
	cmd.Flags().StringSliceVar(&opts.only, "only", nil, "run only these measurements (by name)")
	opts.ssh.bind(cmd.Flags())
	return cmd
}

func runBench(ctx context.Context, a *app, opts *benchOptions) error {
	if opts.n < 0 {
		return usageError{errorf("-n must be positive (or 0 for the defaults)")}
	}
	if opts.scale < 0 {
		return usageError{errorf("--scale must be positive (or 0 for the defaults)")}
	}
	all := a.benchCases(opts)
	cases, err := selectBenchCases(all, opts.only)
	if err != nil {
		return err
	}
	run := benchRunID()
	prog := a.newBenchProgress()
	defer benchSweepDocker(cases, run, prog)
	var out []measurement
	for i, c := range cases {
		p := benchParams{n: cmp.Or(opts.n, c.n), scale: cmp.Or(opts.scale, c.scale), run: run, progress: prog}
		if c.maxN > 0 {
			p.n = min(p.n, c.maxN)
		}
		prog.say("[%d/%d] %s", i+1, len(cases), c.name)
		m, err := measure(ctx, c, p)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			m = measurement{Name: c.name, Backend: c.backend, Baseline: c.baseline, Note: err.Error()}
		}
		m.Ratio = ratio(m.P50ms, m.BaselineP50ms)
		if opts.json {
			if err := json.NewEncoder(a.stdout).Encode(m); err != nil {
				return err
			}
		} else {
			out = append(out, m)
		}
	}
	if !opts.json {
		printBenchTable(a.stdout, out)
	}
	return nil
}

// printBenchTable prints the measurements as a table whose RATIO column
// (runbox's p50 over the baseline's) is what to read first: 0.50x is
// twice as fast as the baseline, 2.00x twice as slow.
func printBenchTable(w io.Writer, out []measurement) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBACKEND\tN\tP50 ms\tP99 ms\tBASELINE\tBASELINE P50 ms\tRATIO\tPER SECOND\tNOTE")
	for _, m := range out {
		r := "-"
		if m.Ratio > 0 {
			r = fmt.Sprintf("%.2fx", m.Ratio)
		}
		ps := "-"
		if m.PerSecond > 0 {
			ps = fmt.Sprintf("%.0f", m.PerSecond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%s\t%.3f\t%s\t%s\t%s\n", m.Name, m.Backend, m.N, m.P50ms, m.P99ms, m.Baseline, m.BaselineP50ms, r, ps, m.Note)
	}
	tw.Flush()
}

// ratio is p50 over base, 0 when either is missing.
func ratio(p50, base float64) float64 {
	if p50 <= 0 || base <= 0 {
		return 0
	}
	return p50 / base
}

// selectBenchCases keeps the cases named in only (all of them when only
// is empty), in their own order. A name that is no case is a usage error
// that lists the valid names.
func selectBenchCases(all []benchCase, only []string) ([]benchCase, error) {
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, c := range all {
		names = append(names, c.name)
	}
	for _, o := range only {
		if !slices.Contains(names, o) {
			return nil, usageError{errorf("--only %s: no such measurement; valid names: %s", o, strings.Join(names, ", "))}
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(c benchCase) bool { return !slices.Contains(only, c.name) }), nil
}

func benchRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// benchChunk is how many runs of a measurement come back to back before
// as many of its baseline.
const benchChunk = 10

func measure(ctx context.Context, c benchCase, p benchParams) (measurement, error) {
	if c.custom != nil {
		return c.custom(ctx, p)
	}
	op, base, cleanup, err := c.setup(ctx, p)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	// One warm-up each, so neither side pays for a cold cache alone.
	if err := op(ctx); err != nil {
		return measurement{}, err
	}
	if err := base(ctx); err != nil {
		return measurement{}, fmt.Errorf("baseline: %w", err)
	}
	// In alternating runs of benchChunk, so that a change in the
	// machine's load weighs on both sides alike, while each side still
	// runs back to back.
	opT := make([]time.Duration, 0, p.n)
	baseT := make([]time.Duration, 0, p.n)
	for len(opT) < p.n {
		k := min(benchChunk, p.n-len(opT))
		o, err := timeN(ctx, op, k)
		if err != nil {
			return measurement{}, err
		}
		b, err := timeN(ctx, base, k)
		if err != nil {
			return measurement{}, fmt.Errorf("baseline: %w", err)
		}
		opT, baseT = append(opT, o...), append(baseT, b...)
	}
	return measurement{
		Name: c.name, Backend: c.backend, N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: c.baseline, BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// timeN runs f n times and returns each run's duration. It stops at the
// first error, or when ctx ends.
func timeN(ctx context.Context, f func(context.Context) error, n int) ([]time.Duration, error) {
	d := make([]time.Duration, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := f(ctx); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
}

// quantile returns the q-quantile in milliseconds (nearest rank), not
// rounded: the gate's times are a few microseconds.
func quantile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}

func (a *app) benchCases(opts *benchOptions) []benchCase {
	cases := []benchCase{
		// 300 back to back: an agent sends thousands of commands a
		// session, and the first few, before the pre-started shells keep
		// up, are not what each of them costs.
		{name: "true", backend: "local", baseline: "bash -c true", n: 300, setup: a.benchLocalTrue},
	}
	cases = append(cases, benchLocalCases(a)...)
	cases = append(cases, benchUndoCases(a)...)
	cases = append(cases, benchGateCases(a)...)
	cases = append(cases, benchJobCases(a)...)
	cases = append(cases, benchMCPCases(a)...)
	cases = append(cases, benchSSHCases(a, &opts.ssh)...)
	cases = append(cases, benchDockerCases(a)...)
	return append(cases, benchKubeCases(a)...)
}

func (a *app) benchLocalTrue(ctx context.Context, _ benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
	env, err := a.providers.Open(ctx, "local", envs.Spec{Sandbox: "off"})
	if err != nil {
		return nil, nil, nil, err
	}
	op, base = benchLocalTrueOn(env)
	return op, base, func() { env.Close(context.Background()) }, nil
}

// benchProgress tells a person at a terminal what the bench is doing:
// one line per step on stderr, and at most one update a second from a
// long loop. It says nothing when stderr is not a terminal (a pipe, a
// file, a test), so `--json` output and logs stay clean.
type benchProgress struct {
	mu   sync.Mutex
	w    *os.File // nil: silent
	last time.Time
}

func (a *app) newBenchProgress() *benchProgress {
	if f, ok := a.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &benchProgress{w: f}
	}
	return &benchProgress{}
}

// say prints one line.
func (p *benchProgress) say(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "runbox bench: "+format+"\n", args...)
	p.last = time.Now()
}

// step reports progress i of total in a loop, at most once a second (and
// always for the last one).
func (p *benchProgress) step(what string, i, total int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	due := i == total || time.Since(p.last) >= time.Second
	p.mu.Unlock()
	if due {
		p.say("  %s %d/%d", what, i, total)
	}
}
