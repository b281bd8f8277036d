package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/procregistry"
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

func newLifetimeCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "lifetime ID CLASS",
		Short: "Change a running job's lifetime: " + strings.Join(procregistry.LifetimeNames()[1:], ", "),
		Long: `Change a running job's class:
  session     ends when its owner's session ends (runbox serve, runbox start --session)
  detached    outlives its owner's session until it ends or is killed
  keep-awake  detached, and while it runs the sandbox it runs in counts as in use:
              idle timeouts do not close or reap it`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := procregistry.ParseLifetime(args[1])
			if err != nil {
				return err
			}
			c, err := a.jobsClient(cmd.Context())
			if err != nil {
				return err
			}
			in, err := c.SetLifetime(cmd.Context(), args[0], l)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s now %s\n", in.ID, in.Lifetime)
			return nil
		},
	}
}
