package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newHandoffCommand(a *app) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "handoff ID OWNER",
		Short: "Move a job to another owner, who then receives its completion",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.jobsClient(cmd.Context())
			if err != nil {
				return err
			}
			in, err := c.Handoff(cmd.Context(), args[0], args[1], note)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s now owned by %s\n", in.ID, in.Owner)
			return nil
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "a note for the new owner")
	return cmd
}
