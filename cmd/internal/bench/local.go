package bench

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// pace is the pause before each command of true.paced: what an agent
// leaves between commands is far longer, and this is enough for the next
// shell to be ready.
const pace = 5 * time.Millisecond

// localCases are the local backend's measurements:
//
//   - true: `true` back to back, on the pre-started shells, as every
//     local command runs by default, against a bare `bash -c true`; 300
//     of them, since an agent sends thousands of commands a session, and
//     the first few, before the pre-started shells keep up, are not what
//     each of them costs;
//   - true.sandboxed: `true` back to back under the workspace sandbox,
//     against `true` back to back unconfined ("true" runs unconfined, so
//     that its baseline stays the bare shell): what confinement costs
//     when every command waits for its confined shell's start;
//   - true.sandboxed.paced: the same with a pause before each command:
//     what it costs an agent, whose next confined shell is ready;
//   - true.paced: `true` with a pause before each command (not timed), as
//     an agent's commands come, against `bash -c true` paced the same way:
//     the command finds its shell ready;
//   - true.cold: `true` back to back with no pre-started shell, each
//     command starting its own, against `bash -c true`: what the
//     pre-started shells save.
func localCases(h Host) []caseDef {
	return []caseDef{
		{name: "true", backend: "local", baseline: "bash -c true", n: 300,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				return localTrue(ctx, h)
			}},
		{name: "true.sandboxed", backend: "local", baseline: "runbox true, sandbox off", n: 300,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				return localTrueSandboxed(ctx, h)
			}},
		{name: "true.sandboxed.paced", backend: "local", baseline: "runbox true, sandbox off, paced", n: 100,
			custom: func(ctx context.Context, p params) (Measurement, error) { return localSandboxedPaced(ctx, h, p) }},
		{name: "true.paced", backend: "local", baseline: "bash -c true", n: 100,
			custom: func(ctx context.Context, p params) (Measurement, error) { return localPaced(ctx, h, p) }},
		{name: "true.cold", backend: "local", baseline: "bash -c true", n: 100,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				return localTrueCold(h)
			}},
	}
}

// trueOn is the `true` command on env and the bare baseline.
func trueOn(env envs.Environment) (op, base func(context.Context) error) {
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

// openLocal opens the local backend through the provider table, as a
// session would, with the sandbox profile given.
func openLocal(ctx context.Context, h Host, sandbox string) (envs.Environment, error) {
	return h.Service.Providers().Open(ctx, "local", envs.Spec{Sandbox: sandbox})
}

func localTrue(ctx context.Context, h Host) (op, base func(context.Context) error, cleanup func(), err error) {
	env, err := openLocal(ctx, h, "off")
	if err != nil {
		return nil, nil, nil, err
	}
	op, base = trueOn(env)
	return op, base, func() { env.Close(context.Background()) }, nil
}

// localTrueCold opens the local backend with the configuration's options
// but no pre-started shell. It is opened below the provider table,
// because no spec asks for that: nothing but this measurement wants it.
func localTrueCold(h Host) (op, base func(context.Context) error, cleanup func(), err error) {
	o := h.Service.LocalOptions(envs.Spec{})
	o.NoPrestart = true
	env, err := local.New(o)
	if err != nil {
		return nil, nil, nil, err
	}
	op, base = trueOn(env)
	return op, base, func() { env.Close(context.Background()) }, nil
}

func localPaced(ctx context.Context, h Host, p params) (Measurement, error) {
	env, err := openLocal(ctx, h, "off")
	if err != nil {
		return Measurement{}, err
	}
	defer env.Close(context.Background())
	op, base := trueOn(env)
	return paced(ctx, p, "true.paced", "bash -c true", op, base)
}

// localSandboxedPaced is true.sandboxed with a pause before each
// command, as an agent's commands come: the next confined shell is ready.
func localSandboxedPaced(ctx context.Context, h Host, p params) (Measurement, error) {
	op, base, cleanup, err := localTrueSandboxed(ctx, h)
	if err != nil {
		return Measurement{}, err
	}
	defer cleanup()
	return paced(ctx, p, "true.sandboxed.paced", "runbox true, sandbox off, paced", op, base)
}

// paced times p.n runs of op and of base, alternating (pair by pair, so
// that a change in the machine's load weighs on both alike), each after
// pace.
func paced(ctx context.Context, p params, name, baseline string, op, base func(context.Context) error) (Measurement, error) {
	timed := func(f func(context.Context) error) (time.Duration, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(pace):
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
			return Measurement{}, err
		}
		opT = append(opT, d)
		if d, err = timed(base); err != nil {
			return Measurement{}, err
		}
		baseT = append(baseT, d)
	}
	return Measurement{
		Name: name, Backend: "local", N: p.n,
		P50ms: quantile(opT, 0.50), P99ms: quantile(opT, 0.99),
		Baseline: baseline, BaselineP50ms: quantile(baseT, 0.50),
	}, nil
}

// localTrueSandboxed times `true` under the workspace sandbox against
// `true` on an unconfined environment, pair by pair in the same run.
func localTrueSandboxed(ctx context.Context, h Host) (op, base func(context.Context) error, cleanup func(), err error) {
	confined, err := openLocal(ctx, h, "workspace")
	if err != nil {
		return nil, nil, nil, err
	}
	open, err := openLocal(ctx, h, "off")
	if err != nil {
		confined.Close(context.Background())
		return nil, nil, nil, err
	}
	op, _ = trueOn(confined)
	base, _ = trueOn(open)
	return op, base, func() {
		confined.Close(context.Background())
		open.Close(context.Background())
	}, nil
}

// runTrue runs `true` by argv in env and fails unless it exits 0: the
// command every remote backend's rows time.
func runTrue(ctx context.Context, env envs.Environment) error {
	res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
	if err == nil && res.Code != 0 {
		err = fmt.Errorf("true exited %d", res.Code)
	}
	return err
}
