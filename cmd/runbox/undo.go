package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/undo"
)

type undoOptions struct {
	to    int64
	last  bool
	list  bool
	force bool
	json  bool
	dir   string
	place placeFlags // --backend, --image, --task: a journal kept in a backend
}

// newUndoCommand is `runbox undo`: put the workspace back as it was
// before a command whose changes runbox recorded.
func newUndoCommand(a *app) *cobra.Command {
	var opts undoOptions
	cmd := &cobra.Command{
		Use:   "undo [--last | --to STEP | --list]",
		Short: "Put the workspace back as it was before a command",
		Long: `Put the workspace back as it was before the last command whose changes
runbox recorded (runbox run --changes, workspace.changes: on, and every command
of runbox serve), or before step STEP and every step after it.

Every recorded command's result names its first step ("changes": {"step": N}).
runbox undo restores content, modes, symbolic links, directories and deleted
files; it refuses, naming the paths, when an edit made outside any command
since then would be lost (--force reverts that edit too), and when content it
needs was too big to keep. --list shows the journal's steps.

The workspace is the current directory (or --cwd). With --backend, the journal
is the one runbox's agent keeps inside that backend's environment (a task's
container, pod or sandbox: --task), for the workspace --cwd names there (by
default the directory commands start in). See docs/undo.md.`,
		Example: `  runbox run --changes -- sed -i s/foo/bar/ *.go
  runbox undo
  runbox undo --list
  runbox undo --to 12
  runbox run --backend docker --task fix --changes -- make generate
  runbox undo --backend docker --task fix`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("to") && opts.last {
				return usageError{errorf("undo: --to and --last say different things; give one")}
			}
			return a.reportJSON(opts.json, runUndo(cmd.Context(), a, &opts))
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.to, "to", 0, "restore the state before this step (and undo every step after it)")
	f.BoolVar(&opts.last, "last", false, "undo the last command (the default)")
	f.BoolVar(&opts.list, "list", false, "list the recorded steps instead")
	f.BoolVar(&opts.force, "force", false, "also revert edits made outside any command to the same paths")
	f.BoolVar(&opts.json, "json", false, "print the result as JSON")
	f.StringVar(&opts.dir, "cwd", ".", "the workspace")
	opts.place.register(f, forUndo)
	return cmd
}

// undoJournal is what runbox undo asks: a journal on this machine, or a
// backend session's.
type undoJournal interface {
	Steps(ctx context.Context) ([]undo.Step, error)
	Undo(ctx context.Context, o undo.UndoOptions) (*undo.Undone, error)
}

func runUndo(ctx context.Context, a *app, opts *undoOptions) error {
	j, done, err := openUndoJournal(ctx, a, opts)
	if err != nil {
		return err
	}
	defer done()
	if opts.list {
		steps, err := j.Steps(ctx)
		if err != nil {
			return err
		}
		return printSteps(a.stdout, steps, opts.json)
	}
	undone, err := j.Undo(ctx, undo.UndoOptions{To: opts.to, Force: opts.force})
	if err != nil {
		return undoError(err)
	}
	return printUndone(a, undone, opts.json)
}

// openUndoJournal opens the journal runbox undo acts on: this machine's
// for the workspace, or, for a backend that runs commands elsewhere, the
// one its agent keeps there, reached through a session of that backend
// (the task's environment).
func openUndoJournal(ctx context.Context, a *app, opts *undoOptions) (undoJournal, func(), error) {
	backend := cmp.Or(opts.place.backend, a.cfg.Backend)
	p, err := a.svc.Providers().Lookup(backend)
	if err != nil {
		return nil, nil, err
	}
	if p.OnThisMachine {
		if opts.place.task != "" || opts.place.image != "" {
			return nil, nil, usageError{errorf("undo: --task and --image name a backend's environment; backend %s keeps its journal on this machine", backend)}
		}
		j, err := a.svc.HostJournal(opts.dir)
		if err != nil {
			return nil, nil, err
		}
		return j, func() { j.Close() }, nil
	}
	if p.TaskEnvs && opts.place.task == "" {
		return nil, nil, usageError{errorf("undo --backend %s: name the task (--task T) whose environment keeps the journal; a run without --task gets a new environment, with nothing to undo", backend)}
	}
	if err := a.checkTaskFlags(&opts.place, backend); err != nil {
		return nil, nil, err
	}
	spec, err := opts.place.spec(a.svc.Limits())
	if err != nil {
		return nil, nil, err
	}
	if opts.dir != "." {
		spec.Dir = opts.dir // else the directory commands start in there
	}
	if opts.place.task != "" {
		spec.Settings = map[string]string{service.SettingTask: opts.place.task}
	}
	ss, err := a.svc.NewSession(service.SessionOptions{ID: "cli", Backend: backend, Spec: spec})
	if err != nil {
		return nil, nil, err
	}
	return sessionJournal{ss}, func() { ss.Close(context.WithoutCancel(ctx)) }, nil
}

// sessionJournal is a backend session's journal.
type sessionJournal struct{ ss *service.Session }

func (s sessionJournal) Steps(ctx context.Context) ([]undo.Step, error) {
	return s.ss.ChangeSteps(ctx)
}

func (s sessionJournal) Undo(ctx context.Context, o undo.UndoOptions) (*undo.Undone, error) {
	return s.ss.Undo(ctx, o)
}

// printUndone says what an undo did.
func printUndone(a *app, done *undo.Undone, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(a.stdout).Encode(done)
	}
	fmt.Fprintf(a.stdout, "undid step(s) %s: %s\n", joinInts(done.Steps), strings.Join(done.Commands, "; "))
	printChanges(a.stdout, done.Restored, done.More)
	return nil
}

// undoError says what to do about a refused undo.
func undoError(err error) error {
	switch {
	case errors.Is(err, undo.ErrConflict):
		return fmt.Errorf("%w (runbox undo --force reverts those edits too)", err)
	case errors.Is(err, undo.ErrNothing):
		return fmt.Errorf("%w (runbox records changes with run --changes, workspace.changes: on, and in runbox serve)", err)
	}
	return err
}

func printSteps(w io.Writer, steps []undo.Step, asJSON bool) error {
	if asJSON {
		if steps == nil {
			steps = []undo.Step{}
		}
		return json.NewEncoder(w).Encode(map[string]any{"steps": steps})
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTIME\tCHANGES\tKEPT\tBY")
	for _, s := range steps {
		by := strings.Join(s.Commands, "; ")
		if by == "" {
			by = "(outside any command)"
		}
		kept := sizeText(&s.Bytes)
		if s.NotKept > 0 {
			kept += fmt.Sprintf(" (%d not kept)", s.NotKept)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", s.Seq, s.Time.Local().Format("15:04:05"), s.Changes, kept, by)
	}
	return tw.Flush()
}

// printChanges writes one line per change.
func printChanges(w io.Writer, cs []undo.Change, more int) {
	for _, c := range cs {
		fmt.Fprintf(w, "  %-8s %s\n", c.Kind, c.Name())
	}
	if more > 0 {
		fmt.Fprintf(w, "  … and %d more\n", more)
	}
}

// changeReporter is a process that says what it changed (service's
// changeProcess).
type changeReporter interface {
	Changes() *undo.Record
	ChangeWarnings() []string
}

// reportChanges says, on stderr, what a command changed and how to undo
// it.
func reportChanges(a *app, r *undo.Record, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "runbox: %s\n", w)
	}
	sum := r.Summary(4)
	if sum == "" {
		return
	}
	fmt.Fprintf(a.stderr, "runbox: changed %s; undo with: runbox undo\n", sum)
	if len(r.NotKept) > 0 {
		fmt.Fprintf(a.stderr, "runbox: too big to keep, cannot be undone: %s\n", strings.Join(r.NotKept, ", "))
	}
}

func joinInts(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
