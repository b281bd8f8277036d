package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// runYield is runbox run --yield: the command runs as a job of the job
// daemon (judged by the gate first, like runbox start), and runbox waits
// for it up to the yield. A command that ends by then is shown like a
// run's and runbox exits with its status; one still running has its
// output so far printed, its id on stderr, and runbox exits
// exitStillRunning while the job carries on: runbox logs, wait, write
// and kill continue it.
func runYield(ctx context.Context, a *app, opts *runOptions, shell string, env map[string]string, limits envs.Limits) error {
	if backend := cmp.Or(opts.backend, a.cfg.Backend); !a.svc.Providers().OnThisMachine(backend) || a.remote != nil {
		return usageError{errorf("--yield runs the command as a job of this machine's job daemon: a backend on this machine only (got %s)", backend)}
	}
	if opts.pty || opts.timeout > 0 || opts.task != "" || opts.sync != "" || opts.workspace {
		return usageError{errorf("--yield runs the command as a background job: it takes no --pty, --timeout, --task, --sync or --workspace (kill it with runbox kill)")}
	}
	cwd := opts.cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return errorf("%v", err)
		}
	}
	req := procregistry.StartRequest{
		Shell: shell, Dir: cwd, Env: env, Owner: a.defaultOwner(),
		Lifetime: procregistry.LifetimeDetached, // it outlives this runbox
	}
	if !limits.IsZero() {
		req.Limits = &limits
	}
	client, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	connect := func(context.Context) (service.Jobs, error) { return client, nil }
	in, err := a.startJob(ctx, connect, cwd, req)
	if err != nil {
		return err
	}
	limit := firstPositive(opts.outputLimit, a.cfg.OutputLimit, envs.DefaultOutputLimit)
	yr, err := service.WaitYield(ctx, client, in.ID, opts.yield, limit)
	if err != nil {
		return err
	}
	if opts.json {
		json.NewEncoder(a.stdout).Encode(yr)
	} else {
		fmt.Fprint(a.stdout, yr.Output)
	}
	switch {
	case !yr.Done:
		fmt.Fprintf(a.stderr, "runbox: still running after %v as job %s: runbox logs -f %s, runbox wait %s\n", opts.yield, yr.Job.ID, yr.Job.ID, yr.Job.ID)
		return quietError{&envs.ExitError{Code: exitStillRunning}}
	case yr.Job.Exit == nil || yr.Job.Status == procregistry.StatusFailed:
		return errorf("job %s %s: %s", yr.Job.ID, yr.Job.Status, yr.Job.Error)
	case yr.Job.Exit.Code != 0:
		return quietError{&envs.ExitError{Code: yr.Job.Exit.Code, Signal: yr.Job.Exit.Signal}}
	}
	return nil
}
