package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

type startOptions struct {
	notify    bool
	watch     []string
	heartbeat time.Duration
	quiet     time.Duration
	noOutput  time.Duration
	inputWait time.Duration
	pty       bool
	key       string
	owner     string
	session   bool
	lifetime  string
	args      []string
	// --cwd, --env and the limits; where the job daemon is comes with
	// every job command (withJobTargets).
	placeFlags
}

func newStartCommand(a *app) *cobra.Command {
	var opts startOptions
	cmd := &cobra.Command{
		Use:   "start [flags] -- COMMAND [ARG...]",
		Short: "Start a background job and print its id",
		Long: `Start a command in the background and print its job id at once.

The job runs under a supervisor of its own, detached from this shell: it keeps
running after runbox exits, its output goes to a log on disk (see "runbox logs"),
and its exit status is recorded even if the job daemon is restarted. Manage it
from any shell of the same user with ps, logs, wait, kill, write, submit, close
and handoff; job ids may be shortened to any unique prefix.`,
		Example: `  runbox start -- npm run dev
  runbox start --notify --watch 'ERROR|FAIL' --heartbeat 60s -- make test
  runbox start --key build-1 -- go build ./...
  runbox start --notify --input-wait 2s --no-output-timeout 10m -- ./install.sh`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.args = args
			return runStart(cmd.Context(), a, &opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.notify, "notify", false, "queue a completion event for the owner (see runbox events)")
	f.StringArrayVar(&opts.watch, "watch", nil, "queue an event when an output line matches this Go regexp (repeatable)")
	f.DurationVar(&opts.heartbeat, "heartbeat", 0, "queue a heartbeat this often while there is new output (0 = none)")
	f.DurationVar(&opts.quiet, "quiet-after", 0, "queue one quiet event when the job has written nothing for this long, again after its output resumes (0 = none)")
	f.DurationVar(&opts.inputWait, "input-wait", 0, "queue one waiting_for_input event when the job has been blocked reading its stdin, with no output, for this long (0 = none)")
	f.DurationVar(&opts.noOutput, "no-output-timeout", 0, "end the job once it has written nothing for this long; it is then killed by no-output-timeout (0 = none)")
	f.BoolVar(&opts.pty, "pty", false, "run on a pseudo-terminal")
	f.StringVar(&opts.key, "key", "", "idempotency key: a start with a key used before returns that job")
	f.StringVar(&opts.owner, "owner", "", "owner receiving the job's events (default $RUNBOX_OWNER or \"user\")")
	f.BoolVar(&opts.session, "session", false, "end the job with its owner's session instead of leaving it detached (--lifetime session)")
	f.StringVar(&opts.lifetime, "lifetime", "", "the job's class: session, detached (the default) or keep-awake (detached, and its sandbox counts as in use while it runs)")
	opts.register(f, forStart)
	return cmd
}

func runStart(ctx context.Context, a *app, opts *startOptions) error {
	shell := shellCommand(opts.args)
	env, err := a.envFlags(opts.env) // values leave runbox's argv (run.go)
	if err != nil {
		return err
	}
	cwd := opts.cwd
	if cwd == "" && a.remote == nil { // in a container, its daemon's directory
		if cwd, err = os.Getwd(); err != nil {
			return errorf("%v", err)
		}
	}
	limits, err := opts.limitsOver(a.svc.Limits())
	if err != nil {
		return err
	}
	req := procregistry.StartRequest{
		Shell: shell, Dir: cwd, Env: env, Owner: cmp.Or(opts.owner, a.defaultOwner()),
		Notify: opts.notify, Watch: opts.watch, Heartbeat: opts.heartbeat, Key: opts.key,
		Lifetime:   procregistry.LifetimeDetached,
		QuietAfter: opts.quiet, InputWait: opts.inputWait, NoOutputTimeout: opts.noOutput,
	}
	if !limits.IsZero() {
		req.Limits = &limits
	}
	if shown, names := a.redact(shell); len(names) > 0 {
		req.Display, req.Redacted = shown, names
		fmt.Fprintf(a.stderr, "runbox: the command holds the value of %s; ps and the job's record show it as [%s]\n", strings.Join(names, ", "), strings.Join(names, "], ["))
	}
	if opts.session {
		req.Lifetime = procregistry.LifetimeSession
	}
	if opts.lifetime != "" {
		l, err := procregistry.ParseLifetime(opts.lifetime)
		if err != nil {
			return err
		}
		if l == procregistry.LifetimeCommand || (opts.session && l != procregistry.LifetimeSession) {
			return fmt.Errorf("runbox: start: --lifetime %s: %w: a started job is session, detached or keep-awake (and --session is session)", opts.lifetime, envs.ErrBadCommand)
		}
		req.Lifetime = l
	}
	if opts.pty {
		req.PTY = &envs.WindowSize{Rows: 24, Cols: 80}
		if ws := terminalSize(a.stdout); ws != nil {
			req.PTY = ws
		}
	}
	connect := func(ctx context.Context) (service.Jobs, error) { return a.jobsClient(ctx) }
	in, err := a.startJob(ctx, connect, cwd, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, in.ID)
	if in.Status == procregistry.StatusFailed {
		return errorf("job %s failed to start: %s", in.ID, in.Error)
	}
	return nil
}
