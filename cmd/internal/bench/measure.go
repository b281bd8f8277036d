package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// chunk is how many runs of a measurement come back to back before as
// many of its baseline.
const chunk = 10

// measure times c's operation and baseline p.n times each, or runs its
// custom measurement.
func measure(ctx context.Context, c caseDef, p params) (Measurement, error) {
	if c.custom != nil {
		return c.custom(ctx, p)
	}
	op, base, cleanup, err := c.setup(ctx, p)
	if err != nil {
		return Measurement{}, err
	}
	defer cleanup()
	opT, baseT, err := interleave(ctx, op, base, p.n)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{
		Name: c.name, Backend: c.backend, N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: c.baseline, BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// interleave times n runs of op and of base, after one warm-up of each,
// so neither side pays for a cold cache alone. They alternate in runs of
// chunk, so that a change in the machine's load weighs on both sides
// alike while each side still runs back to back. An error of base is
// marked as the baseline's.
func interleave(ctx context.Context, op, base func(context.Context) error, n int) (opT, baseT []time.Duration, err error) {
	if err := op(ctx); err != nil {
		return nil, nil, err
	}
	if err := base(ctx); err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	opT = make([]time.Duration, 0, n)
	baseT = make([]time.Duration, 0, n)
	for len(opT) < n {
		k := min(chunk, n-len(opT))
		o, err := timeN(ctx, op, k)
		if err != nil {
			return nil, nil, err
		}
		b, err := timeN(ctx, base, k)
		if err != nil {
			return nil, nil, fmt.Errorf("baseline: %w", err)
		}
		opT, baseT = append(opT, o...), append(baseT, b...)
	}
	return opT, baseT, nil
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

// ratio is p50 over base, 0 when either is missing.
func ratio(p50, base float64) float64 {
	if p50 <= 0 || base <= 0 {
		return 0
	}
	return p50 / base
}
