package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/service"
)

type tasksOptions struct {
	json    bool
	backend string        // rm: only this backend
	maxIdle time.Duration // reap: the idle age (0 = tasks.max_idle)
}

// newTasksCommand is `runbox tasks` (list) with its rm and reap
// subcommands.
func newTasksCommand(a *app) *cobra.Command {
	var opts tasksOptions
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List what --task keeps between runs, on every backend",
		Long: `List the tasks that --task keeps alive between runs: docker containers,
modal snapshots, daytona sandboxes, directories on ssh hosts. Each row says the
backend, the age, the last use, the size where known and what holds the task.
Backends whose tasks runbox cannot list are named with the reason.

With --json: {"tasks": [{"name", "backend", "created", "last_used",
"size_bytes", "holds", "busy"}], "backends": [{"backend", "state", "detail"}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTasks(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object")
	cmd.AddCommand(newTasksRmCommand(a), newTasksReapCommand(a))
	return cmd
}

func runTasks(ctx context.Context, a *app, opts *tasksOptions) error {
	list := a.svc.Tasks(ctx)
	if opts.json {
		return json.NewEncoder(a.stdout).Encode(list)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tBACKEND\tAGE\tLAST USE\tSIZE\tHELD BY")
	for _, t := range list.Tasks {
		holds := t.Holds
		if t.Busy != "" {
			holds += "; in use: " + t.Busy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Backend, ago(now, t.Created), ago(now, t.LastUsed), sizeText(t.SizeBytes), holds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range list.Backends {
		if b.State != service.TasksListed {
			fmt.Fprintf(a.stdout, "%s: %s: %s\n", b.Backend, b.State, b.Detail)
		}
	}
	return nil
}

// ago is how long before now t was, "-" when unknown.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
}

// sizeText writes a size in binary units, "-" when unknown.
func sizeText(n *int64) string {
	if n == nil {
		return "-"
	}
	const unit = 1024
	v := float64(*n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if v < unit {
			if u == "B" {
				return fmt.Sprintf("%d B", *n)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= unit
	}
	return fmt.Sprintf("%.1f TiB", v)
}

func newTasksRmCommand(a *app) *cobra.Command {
	var opts tasksOptions
	cmd := &cobra.Command{
		Use:   "rm TASK",
		Short: "Remove a task everywhere it lives (or on one backend)",
		Long: `Remove everything a task keeps, on every backend whose tasks runbox can list,
or only on --backend. What runs in the task (jobs, an attached session) is
killed with it. A task found nowhere is an error.

With --json: {"task", "removed": ["docker: container 3f2a…"]}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTasksRm(cmd.Context(), a, args[0], &opts)
		},
	}
	cmd.Flags().StringVar(&opts.backend, "backend", "", "remove the task only on this backend")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object")
	return cmd
}

func runTasksRm(ctx context.Context, a *app, task string, opts *tasksOptions) error {
	removal, err := a.svc.RemoveTask(ctx, task, opts.backend)
	if opts.json && err == nil {
		return json.NewEncoder(a.stdout).Encode(struct {
			Task string `json:"task"`
			service.TaskRemoval
		}{task, removal})
	}
	for _, r := range removal.Removed {
		fmt.Fprintf(a.stdout, "removed %s %s\n", task, r)
	}
	for _, u := range removal.Unavailable {
		fmt.Fprintf(a.stderr, "runbox: %s could not be asked, task %s may still be there: %s\n", u.Backend, task, u.Detail)
	}
	return err
}

func newTasksReapCommand(a *app) *cobra.Command {
	var opts tasksOptions
	cmd := &cobra.Command{
		Use:   "reap",
		Short: "Remove the tasks unused for longer than tasks.max_idle",
		Long: `Remove the tasks last used longer ago than --max-idle (default: the
configuration's tasks.max_idle; runbox serve runs the same reaper periodically
when it is set). A task in which something runs now, or whose last use its
backend cannot tell, is kept.

With --json: {"reaped": [task objects as runbox tasks --json prints them]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTasksReap(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().DurationVar(&opts.maxIdle, "max-idle", 0, "remove tasks unused this long (30m, 168h; default tasks.max_idle)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object")
	return cmd
}

func runTasksReap(ctx context.Context, a *app, opts *tasksOptions) error {
	maxIdle := opts.maxIdle
	if maxIdle == 0 {
		maxIdle = time.Duration(a.cfg.Tasks.MaxIdle)
	}
	if maxIdle <= 0 {
		return usageError{errorf("tasks reap: no idle age: give --max-idle or set tasks.max_idle")}
	}
	reaped, err := a.svc.ReapTasks(ctx, maxIdle)
	if opts.json && err == nil {
		if reaped == nil {
			reaped = []service.TaskInfo{}
		}
		return json.NewEncoder(a.stdout).Encode(struct {
			Reaped []service.TaskInfo `json:"reaped"`
		}{reaped})
	}
	for _, t := range reaped {
		fmt.Fprintf(a.stdout, "reaped %s (%s, last used %s)\n", t.Name, t.Backend, ago(time.Now(), t.LastUsed))
	}
	return err
}

// startTaskReaper runs svc's task reaper (tasks.max_idle; none when it is
// zero) until the returned stop is called, which waits for it to end.
func startTaskReaper(ctx context.Context, svc *service.Service) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.TaskReaper(ctx, service.ReapInterval(time.Duration(svc.Config().Tasks.MaxIdle)))
	}()
	return func() { cancel(); <-done }
}
