package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// syncTarget names the task whose container and manifest a sync command
// uses.
type syncTarget struct {
	task  string
	image string
	json  bool
}

func (s *syncTarget) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.task, "task", "", "the task pushed with runbox run --task T --sync DIR (default docker.task)")
	f.StringVar(&s.image, "image", "", "container image, should the task's container be gone (default from config)")
	f.BoolVar(&s.json, "json", false, "print the result as JSON")
}

func newSyncCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Review and bring back what a command changed in a task's workspace",
		Long: `Bring back what the commands of a task changed in its workspace.

runbox run --backend B --task T --sync DIR pushes DIR to the task's workspace
before the command (only what changed after the first time): /workspace in the
task's container (docker, modal), a directory of the task's own (local), or
--sync-to DIR, else /workspace, on the host (ssh). sync diff and apply find the
task where it was pushed.
runbox sync diff --task T compares three trees: what was pushed last, the
container's /workspace now and DIR now. A path the container changed and you
did not is a change to bring back; one you changed and the container did not is
left alone; one both changed is a conflict. runbox sync apply writes the
changes into DIR.`,
	}
	cmd.AddCommand(newSyncDiffCommand(a), newSyncApplyCommand(a))
	return cmd
}

func newSyncDiffCommand(a *app) *cobra.Command {
	var t syncTarget
	cmd := &cobra.Command{
		Use:   "diff --task T [--json]",
		Short: "Show what the task's container changed, as a unified diff",
		Long: `Show what the task's container changed since the last push, as a git-style
unified diff (a/ is your directory, b/ the container's) that patch -p1 and git
apply accept; colored on a terminal. Binary files get a one-line note.
Conflicts, protected paths and refused paths (with the reason apply will not
write them) are listed on stderr.

With --json: {"task", "changes": [{"path", "kind", "binary", "protected",
"refused", "diff"}], "unsafe": [...]}, kind being added, modified, deleted or
conflict, refused the reason when apply will never write the change.`,
		Example: `  runbox sync diff --task fix-42
  runbox sync diff --task fix-42 | patch -p1 --dry-run`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSyncDiff(cmd.Context(), a, &t) },
	}
	t.bind(cmd)
	return cmd
}

type syncApplyOptions struct {
	syncTarget
	theirs bool
	paths  []string
}

func newSyncApplyCommand(a *app) *cobra.Command {
	var o syncApplyOptions
	cmd := &cobra.Command{
		Use:   "apply --task T [PATH...] [--theirs]",
		Short: "Write the task's container's changes into the local directory",
		Long: `Write the changes that runbox sync diff shows (all of them, or those at or
under each PATH) into the local directory, each file through a temporary file
renamed into place. A conflict refuses the whole apply unless --theirs takes
the container's side. Nothing is written outside the directory or through a
symbolic link, and no link is made that leads out of it (or into .git) once
the links on its way are followed: such a change refuses the whole apply.
Paths git or a shell here would act on (.git in any form and at any depth,
.gitmodules, .gitattributes, hook managers' files, the core.hooksPath
directory, .envrc, shell start-up files, anything in a directory git would
take for a repository) and protected
paths (.env*, runbox's configuration) are skipped with the reason. Files keep
their permission bits without set-id, sticky or world-write.`,
		Example: `  runbox sync apply --task fix-42
  runbox sync apply --task fix-42 src/ README.md
  runbox sync apply --task fix-42 --theirs go.sum`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			return runSyncApply(cmd.Context(), a, &o)
		},
	}
	o.bind(cmd)
	cmd.Flags().BoolVar(&o.theirs, "theirs", false, "apply conflicts too, taking the container's side")
	return cmd
}

// syncEnv opens the task's environment where it was pushed (through the
// service's provider table; a container is kept running afterwards) and
// returns the state directory that holds its manifest.
func (a *app) syncEnv(ctx context.Context, t *syncTarget) (envs.Environment, string, error) {
	task := cmp.Or(t.task, a.cfg.Docker.Task)
	if task == "" {
		return nil, "", usageError{errorf("sync: name the task with --task (or docker.task)")}
	}
	t.task = task
	state, err := a.checkedStateDir()
	if err != nil {
		return nil, "", err
	}
	if _, err := workspace.Load(state, task); err != nil {
		return nil, "", err // before a container is made for nothing
	}
	env, err := a.svc.OpenTask(ctx, state, task, t.image)
	if err != nil {
		return nil, "", err
	}
	return env, state, nil
}

func runSyncDiff(ctx context.Context, a *app, t *syncTarget) error {
	env, state, err := a.syncEnv(ctx, t)
	if err != nil {
		return err
	}
	defer env.Close(context.WithoutCancel(ctx))
	c, err := workspace.Compare(ctx, env, state, t.task)
	if err != nil {
		return err
	}
	c.Protect(a.syncProtected(c.Manifest.Local)...)
	if c.BaseLost != "" {
		fmt.Fprintf(a.stderr, "runbox: %s\n", c.BaseLost)
	}
	if t.json {
		return writeSyncJSON(a.stdout, t.task, c)
	}
	color := isTerminal(a.stdout)
	for _, ch := range c.Changes {
		switch {
		case ch.Refused != "":
			fmt.Fprintf(a.stderr, "runbox: %s: refused: %s; apply will not write it\n", ch.Path, ch.Refused)
		case ch.Protected:
			fmt.Fprintf(a.stderr, "runbox: %s: protected; apply will not write it\n", ch.Path)
		case ch.Kind == workspace.Conflict:
			fmt.Fprintf(a.stderr, "runbox: %s: conflict: changed here and in the container (apply --theirs %s takes the container's)\n", ch.Path, ch.Path)
		}
		d := ch.Diff()
		if color {
			d = colorDiff(d)
		}
		io.WriteString(a.stdout, d)
	}
	for _, u := range c.Unsafe {
		fmt.Fprintf(a.stderr, "runbox: %q: a name that cannot be written here; ignored\n", u)
	}
	if len(c.Changes) == 0 {
		fmt.Fprintf(a.stderr, "runbox: no changes in task %s's container\n", t.task)
	}
	return nil
}

func writeSyncJSON(w io.Writer, task string, c *workspace.Comparison) error {
	out := struct {
		Task    string                   `json:"task"`
		Changes []workspace.ChangeReport `json:"changes"`
		Unsafe  []string                 `json:"unsafe,omitempty"`
		// BaseLost is why no deletion is inferred (see workspace.Comparison).
		BaseLost string `json:"base_lost,omitempty"`
	}{Task: task, Changes: c.Reports(), Unsafe: c.Unsafe, BaseLost: c.BaseLost}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func runSyncApply(ctx context.Context, a *app, o *syncApplyOptions) error {
	env, state, err := a.syncEnv(ctx, &o.syncTarget)
	if err != nil {
		return err
	}
	defer env.Close(context.WithoutCancel(ctx))
	c, err := workspace.Compare(ctx, env, state, o.task)
	if err != nil {
		return err
	}
	c.Protect(a.syncProtected(c.Manifest.Local)...)
	if c.BaseLost != "" {
		fmt.Fprintf(a.stderr, "runbox: %s\n", c.BaseLost)
	}
	rep, err := c.Apply(ctx, workspace.ApplyOptions{Paths: o.paths, Theirs: o.theirs})
	if rep != nil {
		if o.json {
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(rep)
		} else {
			for _, p := range rep.Written {
				fmt.Fprintf(a.stdout, "wrote %s\n", p)
			}
			for _, p := range rep.Deleted {
				fmt.Fprintf(a.stdout, "deleted %s\n", p)
			}
			for _, p := range rep.Skipped {
				fmt.Fprintf(a.stdout, "skipped %s\n", p)
			}
		}
	}
	return err
}

// colorDiff colors a unified diff for a terminal.
func colorDiff(d string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(d, "\n") {
		if l == "" {
			continue
		}
		code := ""
		switch {
		case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			code = "1"
		case strings.HasPrefix(l, "@@"):
			code = "36"
		case strings.HasPrefix(l, "+"):
			code = "32"
		case strings.HasPrefix(l, "-"):
			code = "31"
		}
		if code == "" {
			b.WriteString(l)
			continue
		}
		body, nl := strings.CutSuffix(l, "\n")
		fmt.Fprintf(&b, "\x1b[%sm%s\x1b[0m", code, body)
		if nl {
			b.WriteString("\n")
		}
	}
	return b.String()
}
