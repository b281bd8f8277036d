package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/envs"
)

// newAgentCommand is `runbox agent`: the local backend served over
// stdin/stdout with the agent protocol. Container and remote backends copy
// a static runbox into the sandbox and start this; people do not.
func newAgentCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "agent",
		Short:  "Serve the local backend over stdin/stdout (used inside sandboxes)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), a)
		},
	}
}

func runAgent(ctx context.Context, a *app) error {
	// No subreaper in a sandbox: the sandbox bounds what a command leaves
	// behind (it goes with the environment), and the job daemon that a
	// forwarded job command starts there must outlive that command.
	b := *a
	b.direct = true
	env, err := b.openLocal(envs.Spec{})
	if err != nil {
		return err
	}
	srv := agent.NewServer(env, agent.ServerOptions{Logger: a.log})
	serveErr := srv.Serve(ctx, agent.Stdio(a.stdin, a.stdout))
	closeErr := env.Close(context.WithoutCancel(ctx))
	if serveErr != nil {
		return fmt.Errorf("agent: %w", serveErr)
	}
	return closeErr
}
