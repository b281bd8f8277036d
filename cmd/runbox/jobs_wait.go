package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

type waitOptions struct {
	timeout time.Duration
	json    bool
}

func newWaitCommand(a *app) *cobra.Command {
	var opts waitOptions
	cmd := &cobra.Command{
		Use:   "wait [--timeout D] ID",
		Short: "Wait for a job to finish and exit with its exit code",
		Long: `Wait for a job to finish. runbox then exits with the job's exit code (125 when
it was lost or failed to start). When --timeout passes first, runbox prints
"running" and exits 75 (EX_TEMPFAIL: try again later), which no finished
job's wait gives but a job that itself exited 75: the job keeps running, and
--json's "done": false tells the two apart. A job daemon that dies meanwhile
is started again, and the wait goes on.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWait(cmd.Context(), a, args[0], &opts)
		},
	}
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 0, "stop waiting after this long (0 = no limit)")
	cmd.Flags().BoolVar(&opts.json, "json", false, `print {"info": ..., "done": ...}`)
	return cmd
}

// exitStillRunning is wait's status when --timeout passed first: the
// job is still running (sysexits' EX_TEMPFAIL, "try again later").
const exitStillRunning = 75

func runWait(ctx context.Context, a *app, id string, opts *waitOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	var deadline time.Time
	if opts.timeout > 0 {
		deadline = time.Now().Add(opts.timeout)
	}
	var in procregistry.Info
	var done bool
	err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
		var err error
		switch left := time.Until(deadline); {
		case deadline.IsZero():
			in, done, err = c.Wait(ctx, id, 0)
		case left > 0:
			in, done, err = c.Wait(ctx, id, left)
		default: // the timeout passed while the daemon was away
			in, err = c.Get(ctx, id)
			done = in.Status.Finished()
		}
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		json.NewEncoder(a.stdout).Encode(map[string]any{"info": in, "done": done})
	} else {
		fmt.Fprintln(a.stdout, describe(in))
	}
	if !done {
		return quietError{&envs.ExitError{Code: exitStillRunning}}
	}
	switch {
	case in.Exit != nil && in.Status != procregistry.StatusFailed:
		if in.Exit.Code != 0 {
			return quietError{&envs.ExitError{Code: in.Exit.Code, Signal: in.Exit.Signal}}
		}
		return nil
	default:
		return quietError{errorf("job %s %s", in.ID, in.Status)}
	}
}
