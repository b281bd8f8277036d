package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/termination"
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

// leaveStarter moves the job daemon out of the container of the command
// that started it. On a remote host or in a task's container the daemon
// is started by a job relay, itself a command of the agent there, in its
// own cgroup or systemd scope: the agent tears that down when the relay
// ends, or when it loses its client (a dropped connection), and the
// daemon — with every job's supervisor it starts — would go with it. A
// daemon that cannot leave still serves; its jobs then last as long as
// that command does, which the log says.
func leaveStarter(ctx context.Context, log *slog.Logger) {
	pid := os.Getpid()
	in, err := termination.Leave(ctx, pid, "jobs-daemon-"+strconv.Itoa(pid))
	switch {
	case err != nil:
		log.Warn("runbox: job daemon: cannot leave the container of the command that started it; its jobs end with that command", "err", err)
	case in:
		log.Info("runbox: job daemon left the container of the command that started it")
	}
}
