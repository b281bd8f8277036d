package main

import (
	"context"
	"io"
	"net"
	"sync"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/service"
)

// newRelayCommand is `runbox __relay`: inside a sandbox, one
// connection to the job daemon there (started if none answers) carried
// over this process's stdin and stdout, so that the host's job client
// reaches the sandbox's registry through the agent (service.SandboxJobs).
func newRelayCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    service.RelayCommand,
		Short:  "Relay stdin and stdout to the job daemon (used inside sandboxes)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRelay(cmd.Context(), a)
		},
	}
}

func runRelay(ctx context.Context, a *app) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return errorf("job relay: %v", err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(conn, a.stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			uc.CloseWrite() // the request is complete; answers may follow
		}
	})
	io.Copy(a.stdout, conn)
	conn.Close()
	wg.Wait()
	return nil
}
