package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/termination"
)

// newJobCommands returns the background-job commands: start, ps, logs,
// wait, kill, write, submit, close, handoff, events, and the hidden
// __daemon and __supervise that serve them.
func newJobCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newStartCommand(a), newPsCommand(a), newLogsCommand(a), newWaitCommand(a),
		newKillCommand(a), newWriteCommand(a, "write"), newWriteCommand(a, "submit"),
		newCloseCommand(a), newHandoffCommand(a), newEventsCommand(a),
		newDaemonCommand(a), newSuperviseCommand(a), newRelayCommand(a),
	}
}

// defaultOwner is who CLI jobs belong to: $RUNBOX_OWNER, else "user".
func (a *app) defaultOwner() string { return firstNonEmpty(a.getenv("RUNBOX_OWNER"), "user") }

type startOptions struct {
	notify    bool
	watch     []string
	heartbeat time.Duration
	pty       bool
	key       string
	owner     string
	cwd       string
	env       []string
	session   bool
	limits    limitFlags
	args      []string
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
  runbox start --key build-1 -- go build ./...`,
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
	f.BoolVar(&opts.pty, "pty", false, "run on a pseudo-terminal")
	f.StringVar(&opts.key, "key", "", "idempotency key: a start with a key used before returns that job")
	f.StringVar(&opts.owner, "owner", "", "owner receiving the job's events (default $RUNBOX_OWNER or \"user\")")
	f.StringVar(&opts.cwd, "cwd", "", "working directory (default: the current one)")
	f.StringArrayVar(&opts.env, "env", nil, "set KEY=VALUE in the job's environment (repeatable)")
	f.BoolVar(&opts.session, "session", false, "end the job with its owner's session instead of leaving it detached")
	opts.limits.bind(f)
	return cmd
}

func runStart(ctx context.Context, a *app, opts *startOptions) error {
	shell := shellCommand(opts.args)
	env, err := parseEnvFlags(opts.env)
	if err != nil {
		return err
	}
	cwd := opts.cwd
	if cwd == "" && a.remote == nil { // in a container, its daemon's directory
		if cwd, err = os.Getwd(); err != nil {
			return errorf("%v", err)
		}
	}
	limits, err := opts.limits.resolve(a.svc.Limits())
	if err != nil {
		return err
	}
	req := procregistry.StartRequest{
		Shell: shell, Dir: cwd, Env: env, Owner: firstNonEmpty(opts.owner, a.defaultOwner()),
		Notify: opts.notify, Watch: opts.watch, Heartbeat: opts.heartbeat, Key: opts.key,
		Lifetime: procregistry.LifetimeDetached,
	}
	if !limits.IsZero() {
		req.Limits = &limits
	}
	a.warnWithheld(env)
	if shown, names := a.redact(shell); len(names) > 0 {
		req.Display, req.Redacted = shown, names
		fmt.Fprintf(a.stderr, "runbox: the command holds the value of %s; ps and the job's record show it as [%s]\n", strings.Join(names, ", "), strings.Join(names, "], ["))
	}
	if opts.session {
		req.Lifetime = procregistry.LifetimeSession
	}
	if opts.pty {
		req.PTY = &envs.WindowSize{Rows: 24, Cols: 80}
		if ws := terminalSize(a.stdout); ws != nil {
			req.PTY = ws
		}
	}
	connect := func(ctx context.Context) (service.Jobs, error) { return a.jobsClient(ctx) }
	var in procregistry.Info
	err = a.withAsker(func(asker approval.Asker) error {
		var err error
		in, err = a.svc.StartJob(ctx, connect, withAsker(a.jobGate(ctx, cwd), asker), req)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, in.ID)
	if in.Status == procregistry.StatusFailed {
		return errorf("job %s failed to start: %s", in.ID, in.Error)
	}
	return nil
}

type psOptions struct {
	all, json bool
	owner     string
}

func newPsCommand(a *app) *cobra.Command {
	var opts psOptions
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List background jobs with their status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPs(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.all, "all", "a", false, "list the jobs of every owner")
	cmd.Flags().StringVar(&opts.owner, "owner", "", "list this owner's jobs (default $RUNBOX_OWNER or \"user\")")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print a JSON array")
	return cmd
}

func runPs(ctx context.Context, a *app, opts *psOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	owner := firstNonEmpty(opts.owner, a.defaultOwner())
	if opts.all {
		owner = ""
	}
	jobs, err := c.List(ctx, owner)
	if err != nil {
		return err
	}
	if opts.json {
		if jobs == nil {
			jobs = []procregistry.Info{}
		}
		return json.NewEncoder(a.stdout).Encode(jobs)
	}
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tEXIT\tPID\tAGE\tOWNER\tCOMMAND")
	for _, j := range jobs {
		exit := "-"
		if j.Exit != nil {
			exit = fmt.Sprint(j.Exit.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", j.ID, j.Status, exit, j.PID,
			time.Since(j.Created).Round(time.Second), j.Owner, oneLine(j.Command, 60))
	}
	return tw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

type logsOptions struct {
	follow bool
	offset int64
	tail   int
	limit  int
	id     string
}

func newLogsCommand(a *app) *cobra.Command {
	var opts logsOptions
	cmd := &cobra.Command{
		Use:   "logs [-f] [--offset N] [--tail N] ID",
		Short: "Print a job's output",
		Long: `Print a job's output from its log on disk: all of it, from a byte offset, the
last N lines, or following it live (-f) until the job ends.

With --offset the offset after the last byte printed is written to stderr as
"runbox: next offset N": asking again from there prints every later byte once.
With -f, a job daemon that dies meanwhile is started again and the output goes
on from the same byte, each byte printed once.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if opts.offset < 0 || opts.tail < 0 {
				return usageError{errorf("logs: --offset and --tail want a number >= 0")}
			}
			if cmd.Flags().Changed("tail") && opts.tail == 0 && !opts.follow {
				return nil // the last 0 lines
			}
			return runLogs(cmd.Context(), a, &opts, cmd.Flags().Changed("offset"))
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.follow, "follow", "f", false, "keep printing output as it comes, until the job ends")
	f.Int64Var(&opts.offset, "offset", 0, "start at this byte offset")
	f.IntVar(&opts.tail, "tail", 0, "print only the last N lines")
	f.IntVar(&opts.limit, "limit", 0, "print at most N bytes (with --offset)")
	return cmd
}

func runLogs(ctx context.Context, a *app, opts *logsOptions, showNext bool) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	off := opts.offset
	if opts.tail > 0 {
		ch, err := c.TailLines(ctx, opts.id, opts.tail)
		if err != nil {
			return err
		}
		a.stdout.Write(ch.Data)
		off = ch.Next
	}
	switch {
	case opts.follow:
		err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
			var ferr error
			off, ferr = c.Follow(ctx, opts.id, off, a.stdout)
			return ferr
		})
	case opts.tail == 0:
		var written int
		for {
			want := 1 << 20
			if opts.limit > 0 {
				want = min(want, opts.limit-written)
				if want <= 0 {
					break
				}
			}
			ch, cerr := c.ReadLog(ctx, opts.id, off, want)
			if cerr != nil {
				err = cerr
				break
			}
			a.stdout.Write(ch.Data)
			written += len(ch.Data)
			off = ch.Next
			if len(ch.Data) == 0 || ch.Next >= ch.Size {
				break
			}
		}
	}
	if showNext || opts.follow && err != nil {
		fmt.Fprintf(a.stderr, "runbox: next offset %d\n", off)
	}
	return err
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{errorf("%s: want %d argument(s); see --help", cmd.CommandPath(), n)}
		}
		return nil
	}
}

type waitOptions struct {
	timeout time.Duration
	json    bool
}

func newWaitCommand(a *app) *cobra.Command {
	var opts waitOptions
	cmd := &cobra.Command{
		Use:   "wait [--timeout D] ID",
		Short: "Wait for a job to finish and exit with its exit code",
		Long: `Wait for a job to finish. runbox then exits with the job's exit code (125 when
it was lost or failed to start). When --timeout passes first, runbox prints
"running" and exits 0: that is not an error, and the job keeps running. A job
daemon that dies meanwhile is started again, and the wait goes on.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWait(cmd.Context(), a, args[0], &opts)
		},
	}
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 0, "stop waiting after this long (0 = no limit)")
	cmd.Flags().BoolVar(&opts.json, "json", false, `print {"info": ..., "done": ...}`)
	return cmd
}

func runWait(ctx context.Context, a *app, id string, opts *waitOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	var deadline time.Time
	if opts.timeout > 0 {
		deadline = time.Now().Add(opts.timeout)
	}
	var in procregistry.Info
	var done bool
	err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
		var err error
		switch left := time.Until(deadline); {
		case deadline.IsZero():
			in, done, err = c.Wait(ctx, id, 0)
		case left > 0:
			in, done, err = c.Wait(ctx, id, left)
		default: // the timeout passed while the daemon was away
			in, err = c.Get(ctx, id)
			done = in.Status.Finished()
		}
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		json.NewEncoder(a.stdout).Encode(map[string]any{"info": in, "done": done})
	} else {
		fmt.Fprintln(a.stdout, describe(in))
	}
	if !done {
		return nil
	}
	switch {
	case in.Exit != nil && in.Status != procregistry.StatusFailed:
		if in.Exit.Code != 0 {
			return quietError{&envs.ExitError{Code: in.Exit.Code, Signal: in.Exit.Signal}}
		}
		return nil
	default:
		return quietError{errorf("job %s %s", in.ID, in.Status)}
	}
}

// describe is one line about a job's state.
func describe(in procregistry.Info) string {
	switch in.Status {
	case procregistry.StatusRunning, procregistry.StatusStarting:
		return in.ID + " running"
	case procregistry.StatusExited:
		switch {
		case in.Exit.KilledBy == termination.LimitMemory || in.Exit.KilledBy == termination.LimitPids:
			return fmt.Sprintf("%s exited: killed by the %s (exit %d)", in.ID, strings.ReplaceAll(in.Exit.KilledBy, "-", " "), in.Exit.Code)
		case in.Exit.Signal != 0:
			return fmt.Sprintf("%s exited: killed by signal %d (exit %d)", in.ID, in.Exit.Signal, in.Exit.Code)
		}
		return fmt.Sprintf("%s exited %d", in.ID, in.Exit.Code)
	case procregistry.StatusKilled:
		return fmt.Sprintf("%s killed by %s (exit %d)", in.ID, in.KilledBy, in.Exit.Code)
	}
	return fmt.Sprintf("%s %s: %s", in.ID, in.Status, in.Error)
}

func newKillCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "kill ID",
		Short: "Kill a job's whole process tree",
		Long: `Kill a job's whole process tree (parent first, then survivors, then SIGKILL) and
say what happened: killed, already exited, or lost (its process can no longer
be identified, so nothing was signalled). Survivors are an error (exit 125).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.jobsClient(cmd.Context())
			if err != nil {
				return err
			}
			res, err := c.Kill(cmd.Context(), args[0])
			if res.ID != "" {
				switch res.Outcome {
				case procregistry.KillKilled:
					fmt.Fprintf(a.stdout, "%s killed\n", res.ID)
				case procregistry.KillAlreadyExited:
					fmt.Fprintf(a.stdout, "%s already exited (%s)\n", res.ID, describe(res.Info))
				default:
					fmt.Fprintf(a.stdout, "%s lost: %s (nothing signalled)\n", res.ID, res.Info.Error)
				}
			}
			return err
		},
	}
}

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

type eventsOptions struct {
	follow bool
	owner  string
}

func newEventsCommand(a *app) *cobra.Command {
	var opts eventsOptions
	cmd := &cobra.Command{
		Use:   "events [-f]",
		Short: "Print queued job events (completions, heartbeats, watch matches) as JSON lines",
		Long: `Print the events queued for an owner, one JSON object per line, oldest first,
and remove them from the queue once printed. With -f, keep waiting for more; a
job daemon that dies meanwhile is started again, and no event is printed twice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing events as they come")
	cmd.Flags().StringVar(&opts.owner, "owner", "", "whose queue (default $RUNBOX_OWNER or \"user\")")
	return cmd
}

func runEvents(ctx context.Context, a *app, opts *eventsOptions) error {
	c, err := a.jobsClient(ctx)
	if err != nil {
		return err
	}
	owner := firstNonEmpty(opts.owner, a.defaultOwner())
	enc := json.NewEncoder(a.stdout)
	// printed is the seq of the last event printed: an event whose
	// acknowledgement was lost with the daemon comes again, and is then
	// acknowledged without being printed twice.
	printed := int64(-1)
	err = a.withDaemon(ctx, c, func(c *procregistry.Client) error {
		for {
			evs, err := c.Events(ctx, owner, opts.follow)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if ev.Seq > printed {
					if err := enc.Encode(ev); err != nil {
						return err
					}
					printed = ev.Seq
				}
				if err := c.Ack(ctx, owner, ev.Seq); err != nil {
					return err
				}
			}
			if !opts.follow {
				return nil
			}
		}
	})
	if err != nil && opts.follow && ctx.Err() != nil {
		return nil
	}
	return err
}
