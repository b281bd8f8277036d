package main

import (
	"context"
	"os/exec"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// benchLocalCases are the local backend's measurements besides "true"
// (which runs on the pre-started shells, as every local command does by
// default):
//
//   - true.cold: the same `true` with local.Options.NoPrestart, each
//     command starting its own shell, against bare `bash -c true` — what
//     the pre-started shells save.
func benchLocalCases(a *app) []benchCase {
	return []benchCase{
		{name: "true.cold", backend: "local", baseline: "bash -c true", n: 100, setup: a.benchLocalTrueCold},
	}
}

func (a *app) benchLocalTrueCold(ctx context.Context, _ benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
	o := a.svc.LocalOptions(envs.Spec{})
	o.NoPrestart = true
	env, err := local.New(o)
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
