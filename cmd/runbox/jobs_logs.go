package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/procregistry"
)

type logsOptions struct {
	follow bool
	offset int64
	tail   int
	limit  int
	id     string
}

func newLogsCommand(a *app) *cobra.Command {
	var opts logsOptions
	cmd := &cobra.Command{
		Use:   "logs [-f] [--offset N] [--tail N] ID",
		Short: "Print a job's output",
		Long: `Print a job's output from its log on disk: all of it, from a byte offset, the
last N lines, or following it live (-f) until the job ends.

With --offset the offset after the last byte printed is written to stderr as
"runbox: next offset N": asking again from there prints every later byte once.
With -f, a job daemon that dies meanwhile is started again and the output goes
on from the same byte, each byte printed once.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if opts.offset < 0 || opts.tail < 0 {
				return usageError{errorf("logs: --offset and --tail want a number >= 0")}
			}
			if cmd.Flags().Changed("tail") && opts.tail == 0 && !opts.follow {
				return nil // the last 0 lines
			}
			return runLogs(cmd.Context(), a, &opts, cmd.Flags().Changed("offset"))
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.follow, "follow", "f", false, "keep printing output as it comes, until the job ends")
	f.Int64Var(&opts.offset, "offset", 0, "start at this byte offset")
	f.IntVar(&opts.tail, "tail", 0, "print only the last N lines")
	f.IntVar(&opts.limit, "limit", 0, "print at most N bytes (with --offset)")
	return cmd
}

func runLogs(ctx context.Context, a *app, opts *logsOptions, showNext bool) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	off := opts.offset
	if opts.tail > 0 {
		ch, err := c.TailLines(ctx, opts.id, opts.tail)
		if err != nil {
			return err
		}
		a.stdout.Write(ch.Data)
		off = ch.Next
	}
	switch {
	case opts.follow:
		err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
			var ferr error
			off, ferr = c.Follow(ctx, opts.id, off, a.stdout)
			return ferr
		})
	case opts.tail == 0:
		var written int
		for {
			want := 1 << 20
			if opts.limit > 0 {
				want = min(want, opts.limit-written)
				if want <= 0 {
					break
				}
			}
			ch, cerr := c.ReadLog(ctx, opts.id, off, want)
			if cerr != nil {
				err = cerr
				break
			}
			a.stdout.Write(ch.Data)
			written += len(ch.Data)
			off = ch.Next
			if len(ch.Data) == 0 || ch.Next >= ch.Size {
				break
			}
		}
	}
	if showNext || opts.follow && err != nil {
		fmt.Fprintf(a.stderr, "runbox: next offset %d\n", off)
	}
	return err
}
