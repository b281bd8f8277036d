package main

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// checkTaskFlags refuses --task and --sync where they mean nothing.
func checkTaskFlags(opts *runOptions, backend string) error {
	if opts.task != "" && backend != "docker" {
		return usageError{errorf("--task: a task's container needs --backend docker")}
	}
	if opts.sync == "" {
		if len(opts.syncExclude) > 0 {
			return usageError{errorf("--sync-exclude: only with --sync")}
		}
		return nil
	}
	if opts.task == "" {
		return usageError{errorf("--sync: name the task with --task (it keys the container and what was pushed)")}
	}
	if opts.workspace {
		return usageError{errorf("--sync and --workspace: choose one (--workspace mounts the directory, --sync copies it)")}
	}
	return nil
}

// pushWorkspace pushes --sync's directory to the task's workspace.
func (a *app) pushWorkspace(ctx context.Context, env envs.Environment, opts *runOptions) error {
	state, err := a.checkedStateDir()
	if err != nil {
		return err
	}
	rep, err := workspace.Push(ctx, env, workspace.Options{
		Task: opts.task, Dir: opts.sync, StateDir: state, Exclude: opts.syncExclude,
	})
	if err != nil {
		return err
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(a.stderr, "runbox: --sync: left out %s\n", s)
	}
	a.log.Debug("workspace pushed", "task", opts.task, "full", rep.Full, "sent", len(rep.Sent), "deleted", len(rep.Deleted), "bytes", rep.Bytes)
	return nil
}
