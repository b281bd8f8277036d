package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
)

type benchOptions struct {
	json bool
	n    int
	only []string
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
	// PerSecond is set for throughput measurements (operations per second).
	PerSecond float64 `json:"per_second,omitempty"`
	// Note explains a measurement that could not be taken.
	Note string `json:"note,omitempty"`
}

// benchCase measures op against baseline, each n times in the same run.
type benchCase struct {
	name, backend, baseline string
	// setup prepares the case; its cleanup runs after the measurement.
	setup func(ctx context.Context) (op, base func(ctx context.Context) error, cleanup func(), err error)
	// maxN caps the runs of an expensive case (0: no cap).
	maxN int
	// custom replaces the timed loop (throughput measurements).
	custom func(ctx context.Context, n int) (measurement, error)
}

func newBenchCommand(a *app) *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure runbox against a plain baseline in the same run",
		Long: `Measure runbox's overheads, each against a baseline measured in the same run:
a command through the local backend versus a bare "bash -c"; the command gate's
checks per second versus parsing alone; output throughput into a background
job versus cat to /dev/null, and the cost of 1,000 idle jobs; a command through
the docker backend versus "docker exec", and container creation to first
command versus "docker run -d" + "docker exec" (when an engine answers).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntVarP(&opts.n, "n", "n", 200, "runs per measurement (and per baseline)")
	cmd.Flags().StringSliceVar(&opts.only, "only", nil, "run only these measurements (by name)")
	return cmd
}

func runBench(ctx context.Context, a *app, opts *benchOptions) error {
	if opts.n < 1 {
		return usageError{errorf("-n must be at least 1")}
	}
	var out []measurement
	for _, c := range a.benchCases() {
		if len(opts.only) > 0 && !slices.Contains(opts.only, c.name) {
			continue
		}
		m, err := measure(ctx, c, opts.n)
		if err != nil {
			m = measurement{Name: c.name, Backend: c.backend, Baseline: c.baseline, Note: err.Error()}
		}
		if opts.json {
			if err := json.NewEncoder(a.stdout).Encode(m); err != nil {
				return err
			}
		} else {
			out = append(out, m)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if !opts.json {
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBACKEND\tN\tP50 ms\tP99 ms\tBASELINE\tBASELINE P50 ms\tPER SECOND\tNOTE")
		for _, m := range out {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%s\t%.3f\t%.0f\t%s\n", m.Name, m.Backend, m.N, m.P50ms, m.P99ms, m.Baseline, m.BaselineP50ms, m.PerSecond, m.Note)
		}
		tw.Flush()
	}
	return nil
}

func measure(ctx context.Context, c benchCase, n int) (measurement, error) {
	if c.maxN > 0 {
		n = min(n, c.maxN)
	}
	if c.custom != nil {
		return c.custom(ctx, n)
	}
	op, base, cleanup, err := c.setup(ctx)
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
	opT, err := timeN(ctx, op, n)
	if err != nil {
		return measurement{}, err
	}
	baseT, err := timeN(ctx, base, n)
	if err != nil {
		return measurement{}, fmt.Errorf("baseline: %w", err)
	}
	return measurement{
		Name: c.name, Backend: c.backend, N: n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: c.baseline, BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

func timeN(ctx context.Context, f func(context.Context) error, n int) ([]time.Duration, error) {
	d := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := f(ctx); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
}

// quantile returns the q-quantile in milliseconds (nearest rank).
func quantile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

func (a *app) benchCases() []benchCase {
	cases := []benchCase{
		{name: "true", backend: "local", baseline: "bash -c true", setup: a.benchLocalTrue},
		{name: "gate.check", backend: "approval", baseline: "shell parse only", custom: a.benchGate},
	}
	cases = append(cases, benchJobCases(a)...)
	return append(cases, benchDockerCases(a)...)
}

func (a *app) benchLocalTrue(ctx context.Context) (op, base func(context.Context) error, cleanup func(), err error) {
	env, err := a.providers.Open(ctx, "local", envs.Spec{})
	if err != nil {
		return nil, nil, nil, err
	}
	op = func(ctx context.Context) error {
		res, err := env.Run(ctx, envs.Command{Shell: "true"})
		if err == nil {
			err = res.Err()
		}
		return err
	}
	base = func(ctx context.Context) error { return exec.CommandContext(ctx, "bash", "-c", "true").Run() }
	return op, base, func() { env.Close(context.Background()) }, nil
}
