package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/cmd/internal/agentd"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/spawn"
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

// agentMain is `runbox agent` exactly as a sandbox backend starts it
// (no flags), served the way runbox-agent serves it: without the command
// line's setup (flags, the gate, the provider table), which a static
// runbox running as the agent of each new container would otherwise pay
// for on every start.
func agentMain() int {
	launch := seal.Process(spawn.DefaultPolicy())
	cfg, err := config.Load("", launch.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runbox agent:", err)
		return exitRunbox
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := agentd.Serve(ctx, os.Stdin, os.Stdout, agentd.Options{Config: cfg, Environ: launch.Environ(), Logger: log}); err != nil {
		fmt.Fprintln(os.Stderr, "runbox agent:", err)
		return 1
	}
	return 0
}
