package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/procregistry"
)

type psOptions struct {
	all, json bool
	owner     string
}

func newPsCommand(a *app) *cobra.Command {
	var opts psOptions
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List background jobs with their status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPs(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.all, "all", "a", false, "list the jobs of every owner")
	cmd.Flags().StringVar(&opts.owner, "owner", "", "list this owner's jobs (default $RUNBOX_OWNER or \"user\")")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print a JSON array")
	return cmd
}

func runPs(ctx context.Context, a *app, opts *psOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	owner := cmp.Or(opts.owner, a.defaultOwner())
	if opts.all {
		owner = ""
	}
	jobs, err := c.List(ctx, owner)
	if err != nil {
		return err
	}
	if opts.json {
		if jobs == nil {
			jobs = []procregistry.Info{}
		}
		return json.NewEncoder(a.stdout).Encode(jobs)
	}
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tEXIT\tPID\tAGE\tOWNER\tLIFETIME\tCOMMAND")
	for _, j := range jobs {
		exit := "-"
		if j.Exit != nil {
			exit = fmt.Sprint(j.Exit.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", j.ID, j.Status, exit, j.PID,
			time.Since(j.Created).Round(time.Second), j.Owner, j.Lifetime, oneLine(j.Command, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What --json says in "warning" (a supervisor that died, a degraded
	// start), on stderr, so the table stays a table.
	for _, j := range jobs {
		if j.Warning != "" {
			fmt.Fprintf(a.stderr, "runbox: warning: job %s: %s\n", j.ID, j.Warning)
		}
	}
	return nil
}
