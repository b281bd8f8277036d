package main

import (
	"context"
	"os/exec"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// benchPace is the pause before each command of true.paced: what an agent
// leaves between commands is far longer, and this is enough for the next
// shell to be ready.
const benchPace = 5 * time.Millisecond

// benchLocalCases are the local backend's measurements besides "true"
// (back to back, on the pre-started shells, as every local command runs
// by default):
//
//   - true.paced: `true` with a pause before each command (not timed), as
//     an agent's commands come, against `bash -c true` paced the same way:
//     the command finds its shell ready;
//   - true.cold: `true` back to back with local.Options.NoPrestart, each
//     command starting its own shell, against `bash -c true` — what the
//     pre-started shells save.
func benchLocalCases(a *app) []benchCase {
	return []benchCase{
		{name: "true.paced", backend: "local", baseline: "bash -c true", n: 100,
			custom: func(ctx context.Context, p benchParams) (measurement, error) { return a.benchLocalPaced(ctx, p) }},
		{name: "true.cold", backend: "local", baseline: "bash -c true", n: 100, setup: a.benchLocalTrueCold},
	}
}

// benchLocalTrueOn is the `true` command on env and the bare baseline.
func benchLocalTrueOn(env envs.Environment) (op, base func(context.Context) error) {
	op = func(ctx context.Context) error {
		res, err := env.Run(ctx, envs.Command{Shell: "true"})
		if err == nil {
			err = res.Err()
		}
		return err
	}
	base = func(ctx context.Context) error { return exec.CommandContext(ctx, "bash", "-c", "true").Run() }
	return op, base
}

func (a *app) benchLocalTrueCold(ctx context.Context, _ benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
	o := a.svc.LocalOptions(envs.Spec{})
	o.NoPrestart = true
	env, err := local.New(o)
	if err != nil {
		return nil, nil, nil, err
	}
	op, base = benchLocalTrueOn(env)
	return op, base, func() { env.Close(context.Background()) }, nil
}

func (a *app) benchLocalPaced(ctx context.Context, p benchParams) (measurement, error) {
	env, err := a.providers.Open(ctx, "local", envs.Spec{})
	if err != nil {
		return measurement{}, err
	}
	defer env.Close(context.Background())
	op, base := benchLocalTrueOn(env)
	timePaced := func(f func(context.Context) error) ([]time.Duration, error) {
		d := make([]time.Duration, 0, p.n)
		for range p.n {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(benchPace):
			}
			start := time.Now()
			if err := f(ctx); err != nil {
				return nil, err
			}
			d = append(d, time.Since(start))
		}
		return d, nil
	}
	opT, err := timePaced(op)
	if err != nil {
		return measurement{}, err
	}
	baseT, err := timePaced(base)
	if err != nil {
		return measurement{}, err
	}
	return measurement{
		Name: "true.paced", Backend: "local", N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: "bash -c true", BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}
