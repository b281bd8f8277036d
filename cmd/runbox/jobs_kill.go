package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/procregistry"
)

func newKillCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "kill ID",
		Short: "Kill a job's whole process tree",
		Long: `Kill a job's whole process tree (parent first, then survivors, then SIGKILL) and
say what happened: killed, already exited, or lost (its process can no longer
be identified, so nothing was signalled). Survivors are an error (exit 125).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.jobsClient(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Kill(cmd.Context(), args[0])
			if res.ID != "" {
				switch res.Outcome {
				case procregistry.KillKilled:
					fmt.Fprintf(a.stdout, "%s killed\n", res.ID)
				case procregistry.KillAlreadyExited:
					fmt.Fprintf(a.stdout, "%s already exited (%s)\n", res.ID, describe(res.Info))
				default:
					fmt.Fprintf(a.stdout, "%s lost: %s (nothing signalled)\n", res.ID, res.Info.Error)
				}
			}
			return err
		},
	}
}
