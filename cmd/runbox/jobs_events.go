package main

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/procregistry"
)

type eventsOptions struct {
	follow bool
	owner  string
}

func newEventsCommand(a *app) *cobra.Command {
	var opts eventsOptions
	cmd := &cobra.Command{
		Use:   "events [-f]",
		Short: "Print queued job events (completions, heartbeats, watch matches) as JSON lines",
		Long: `Print the events queued for an owner, one JSON object per line, oldest first,
and remove them from the queue once printed. With -f, keep waiting for more; a
job daemon that dies meanwhile is started again, and no event is printed twice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing events as they come")
	cmd.Flags().StringVar(&opts.owner, "owner", "", "whose queue (default $RUNBOX_OWNER or \"user\")")
	return cmd
}

func runEvents(ctx context.Context, a *app, opts *eventsOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	owner := cmp.Or(opts.owner, a.defaultOwner())
	enc := json.NewEncoder(a.stdout)
	// printed is the seq of the last event printed: an event whose
	// acknowledgement was lost with the daemon comes again, and is then
	// acknowledged without being printed twice.
	printed := int64(-1)
	err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
		for {
			evs, err := c.Events(ctx, owner, opts.follow)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if ev.Seq > printed {
					if err := enc.Encode(ev); err != nil {
						return err
					}
					printed = ev.Seq
				}
				if err := c.Ack(ctx, owner, ev.Seq); err != nil {
					return err
				}
			}
			if !opts.follow {
				return nil
			}
		}
	})
	if err != nil && opts.follow && ctx.Err() != nil {
		return nil
	}
	return err
}
