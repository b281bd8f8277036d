package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/approval"
)

func newWriteCommand(a *app, name string) *cobra.Command {
	short := "Write TEXT to a job's stdin (- reads it from runbox's stdin)"
	if name == "submit" {
		short = "Write TEXT and a line end to a job's stdin"
	}
	return &cobra.Command{
		Use:   name + " ID TEXT",
		Short: short,
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.jobsClient(ctx)
			if err != nil {
				return err
			}
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(a.stdin)
				if err != nil {
					return errorf("%v", err)
				}
				text = string(b)
			}
			// What a job reads from its stdin, a shell or REPL runs: it
			// passes the gate like any command.
			return a.withAsker(func(asker approval.Asker) error {
				return a.svc.WriteJob(ctx, c, withAsker(a.jobGate(ctx, ""), asker), args[0], text, name == "submit")
			})
		},
	}
}

func newCloseCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Send end-of-file to a job's stdin",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.jobsClient(cmd.Context())
			if err != nil {
				return err
			}
			return c.CloseStdin(cmd.Context(), args[0])
		},
	}
}
