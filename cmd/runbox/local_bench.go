package main

import (
	"context"
	"os/exec"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
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
//   - true.cold: `true` back to back with service.LocalTuning.NoPrestart, each
//     command starting its own shell, against `bash -c true` — what the
//     pre-started shells save;
//   - true.sandboxed: `true` back to back under the workspace sandbox,
//     against `true` back to back unconfined ("true" runs unconfined, so
//     that its baseline stays the bare shell): what confinement costs
//     when every command waits for its confined shell's start;
//   - true.sandboxed.paced: the same with a pause before each command:
//     what it costs an agent, whose next confined shell is ready.
func benchLocalCases(a *app) []benchCase {
	return []benchCase{
		{name: "true.sandboxed", backend: "local", baseline: "runbox true, sandbox off", n: 300, setup: a.benchLocalTrueSandboxed},
		{name: "true.sandboxed.paced", backend: "local", baseline: "runbox true, sandbox off, paced", n: 100,
			custom: func(ctx context.Context, p benchParams) (measurement, error) {
				return a.benchLocalSandboxedPaced(ctx, p)
			}},
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
	env, err := a.svc.OpenLocalTuned(envs.Spec{}, service.LocalTuning{NoPrestart: true})
	if err != nil {
		return nil, nil, nil, err
	}
	op, base = benchLocalTrueOn(env)
	return op, base, func() { env.Close(context.Background()) }, nil
}

func (a *app) benchLocalPaced(ctx context.Context, p benchParams) (measurement, error) {
	env, err := a.providers.Open(ctx, "local", envs.Spec{Sandbox: "off"})
	if err != nil {
		return measurement{}, err
	}
	defer env.Close(context.Background())
	op, base := benchLocalTrueOn(env)
	return benchPaced(ctx, p, "true.paced", "bash -c true", op, base)
}

// benchLocalSandboxedPaced is true.sandboxed with a pause before each
// command, as an agent's commands come: the next confined shell is ready.
func (a *app) benchLocalSandboxedPaced(ctx context.Context, p benchParams) (measurement, error) {
	op, base, cleanup, err := a.benchLocalTrueSandboxed(ctx, p)
	if err != nil {
		return measurement{}, err
	}
	defer cleanup()
	return benchPaced(ctx, p, "true.sandboxed.paced", "runbox true, sandbox off, paced", op, base)
}

// benchPaced times p.n runs of op and of base, alternating (pair by pair,
// so that a change in the machine's load weighs on both alike), each
// after benchPace.
func benchPaced(ctx context.Context, p benchParams, name, baseline string, op, base func(context.Context) error) (measurement, error) {
	timed := func(f func(context.Context) error) (time.Duration, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(benchPace):
		}
		start := time.Now()
		err := f(ctx)
		return time.Since(start), err
	}
	opT := make([]time.Duration, 0, p.n)
	baseT := make([]time.Duration, 0, p.n)
	for range p.n {
		d, err := timed(op)
		if err != nil {
			return measurement{}, err
		}
		opT = append(opT, d)
		if d, err = timed(base); err != nil {
			return measurement{}, err
		}
		baseT = append(baseT, d)
	}
	return measurement{
		Name: name, Backend: "local", N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: baseline, BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// benchLocalTrueSandboxed times `true` under the workspace sandbox against
// `true` on an unconfined environment, pair by pair in the same run.
func (a *app) benchLocalTrueSandboxed(ctx context.Context, _ benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
	confined, err := a.providers.Open(ctx, "local", envs.Spec{Sandbox: "workspace"})
	if err != nil {
		return nil, nil, nil, err
	}
	open, err := a.providers.Open(ctx, "local", envs.Spec{Sandbox: "off"})
	if err != nil {
		confined.Close(context.Background())
		return nil, nil, nil, err
	}
	op, _ = benchLocalTrueOn(confined)
	base, _ = benchLocalTrueOn(open)
	return op, base, func() {
		confined.Close(context.Background())
		open.Close(context.Background())
	}, nil
}
