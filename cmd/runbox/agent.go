package main

import (
	"github.com/spf13/cobra"

	"github.com/runbox/runbox/agent/agentd"
)

// newAgentCommand is `runbox agent`: the local backend served over
// stdin/stdout with the agent protocol. Sandboxed backends deploy the
// smaller runbox-agent binary (cmd/runbox-agent), which serves the same;
// this command stays so that a full runbox works as the agent too.
func newAgentCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "agent",
		Short:  "Serve the local backend over stdin/stdout (used inside sandboxes)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agentd.Serve(cmd.Context(), a.stdin, a.stdout, agentd.Options{Config: a.cfg, Environ: a.environ(), Logger: a.log})
		},
	}
}
