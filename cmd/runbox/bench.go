package main

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runbox/runbox/cmd/internal/bench"
)

// benchOptions are runbox bench's flags; cmd/internal/bench measures.
type benchOptions struct {
	json  bool
	n     int // 0: each measurement's own default
	scale int // 0: each scale measurement's own default
	only  []string
	ssh   bench.SSHTarget
}

func newBenchCommand(a *app) *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure runbox against a plain baseline in the same run",
		Long: `Measure runbox's overheads, each against a baseline measured in the same run:
a command through the local backend versus a bare "bash -c"; the command gate's
time per command versus parsing alone, in this process and through "runbox check
--jsonl" over thousands of commands, process start included, and versus a table
of regular expressions in Python over the same input; output throughput into a background
job versus cat to /dev/null, and the cost of idle jobs; a command through the
docker backend versus "docker exec", and container creation to first command
versus "docker run -d" + "docker exec", cold and from a warm pool (when an
engine answers); a command through the ssh backend versus "ssh HOST true" and
versus "ssh -S SOCKET HOST true" through an open ControlMaster (with
--ssh-host or ssh.host); pod creation to first command and a command through
the kubernetes backend versus client-go's own pod creation and exec (with a
cluster in the kubernetes section or the kubeconfig).

The default sizes keep the whole run under a minute; -n and --scale raise them
(for example --only jobs.idle --scale 1000 for a thousand idle jobs). Ctrl-C
stops at once; every job, state directory and container the bench made is
removed on the way out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntVarP(&opts.n, "n", "n", 0, "runs per measurement and per baseline (0 = each measurement's default)")
	cmd.Flags().IntVar(&opts.scale, "scale", 0, "size of the scale measurements: idle jobs for jobs.idle (0 = the default, 20)")
	cmd.Flags().StringSliceVar(&opts.only, "only", nil, "run only these measurements (by name)")
	bindBenchSSH(cmd.Flags(), &opts.ssh)
	return cmd
}

// bindBenchSSH binds the host of the ssh measurements: --ssh-host (else
// ssh.host, RUNBOX_SSH_HOST) with --identity and --accept-new-host-key.
func bindBenchSSH(f *pflag.FlagSet, t *bench.SSHTarget) {
	f.StringVar(&t.Host, "ssh-host", "", "host of the ssh measurements, [user@]host[:port] (default ssh.host; none: they are skipped with a note)")
	f.StringVar(&t.Identity, "identity", "", "private key for the ssh measurements, offered by runbox and by the ssh client alike")
	f.BoolVar(&t.AcceptNewHostKey, "accept-new-host-key", false, "record the ssh host's key if known_hosts does not list it")
}

// runBench checks the flags, as usage errors, and hands the app's
// service, job registry and streams to cmd/internal/bench.
func runBench(ctx context.Context, a *app, opts *benchOptions) error {
	if opts.n < 0 {
		return usageError{errorf("-n must be positive (or 0 for the defaults)")}
	}
	if opts.scale < 0 {
		return usageError{errorf("--scale must be positive (or 0 for the defaults)")}
	}
	host := bench.Host{Service: a.svc, OpenRegistry: a.openRegistry, Stdout: a.stdout, Stderr: a.stderr, Logger: a.log}
	err := bench.Run(ctx, host, bench.Options{JSON: opts.json, N: opts.n, Scale: opts.scale, Only: opts.only, SSH: opts.ssh})
	var unknown *bench.UnknownCaseError
	if errors.As(err, &unknown) {
		return usageError{errorf("--only %s: no such measurement; valid names: %s", unknown.Name, strings.Join(unknown.Valid, ", "))}
	}
	return err
}
