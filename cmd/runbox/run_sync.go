package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// taskBackends are the backends that keep a task's environment between
// runs (a container, a snapshot, a pod or claim, an instance, a sandbox).
func (a *app) taskBackends() []string {
	return a.svc.Providers().Where(func(p envs.Provider) bool { return p.TaskEnvs })
}

// checkTaskFlags refuses --task and --sync where they mean nothing.
func (a *app) checkTaskFlags(opts *placeFlags, backend string) error {
	if tb := a.taskBackends(); opts.task != "" && opts.sync == "" && !slices.Contains(tb, backend) {
		return usageError{errorf("--task: a task's environment needs --backend %s (or --sync DIR, on any backend that can move files)", strings.Join(tb, ", "))}
	}
	if opts.sync == "" {
		if len(opts.syncExclude) > 0 {
			return usageError{errorf("--sync-exclude: only with --sync")}
		}
		if opts.syncTo != "" {
			return usageError{errorf("--sync-to: only with --sync")}
		}
		return nil
	}
	if opts.task == "" {
		return usageError{errorf("--sync: name the task with --task (it keys the container and what was pushed)")}
	}
	if opts.workspace {
		return usageError{errorf("--sync and --workspace: choose one (--workspace mounts the directory, --sync copies it)")}
	}
	return nil
}

// taskPush is where --sync pushes: the state directory that keeps the
// task's manifest, and the directory on the backend (service.TaskPlace).
type taskPush struct{ state, remote string }

// pushWorkspace pushes --sync's directory to the task's workspace in
// env, opened on backend with spec (see service.TaskPlace).
func (a *app) pushWorkspace(ctx context.Context, env envs.Environment, backend string, spec envs.Spec, push taskPush, opts *runOptions) error {
	rep, err := a.svc.PushTask(ctx, env, backend, spec, push.remote, a.syncOptions(opts.task, opts.sync, push.state, opts.syncExclude))
	if err != nil {
		return err
	}
	if rep.Replaced != "" {
		fmt.Fprintf(a.stderr, "runbox: --sync: %s\n", rep.Replaced)
	}
	if rep.MovedAside != "" {
		fmt.Fprintf(a.stderr, "runbox: --sync: what it held is kept in the container at %s\n", rep.MovedAside)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(a.stderr, "runbox: --sync: left out %s\n", s)
	}
	for _, p := range rep.Conflicts {
		fmt.Fprintf(a.stderr, "runbox: --sync: %s changed here and in the container; the container's is kept (see runbox sync diff --task %s)\n", p, opts.task)
	}
	a.log.Debug("workspace pushed", "task", opts.task, "full", rep.Full, "sent", len(rep.Sent), "deleted", len(rep.Deleted), "bytes", rep.Bytes)
	return nil
}

// syncOptions are the push options of a task from the configuration's
// sync section and the flags.
func (a *app) syncOptions(task, dir, state string, exclude []string) workspace.Options {
	c := a.cfg.Sync
	return workspace.Options{
		Task: task, Dir: dir, StateDir: state,
		Exclude:     append(slices.Clone(c.Exclude), exclude...),
		Protected:   a.syncProtected(dir),
		MaxBytes:    int64(c.MaxSize),
		IncludeGit:  c.IncludeGit,
		NoGitignore: c.NoGitignore,
	}
}

// syncProtected is the protected list in force: the built-in one, the
// configuration's additions, and runbox's configuration file itself when
// it lies inside dir.
func (a *app) syncProtected(dir string) []string {
	p := append(slices.Clone(workspace.DefaultProtected), a.cfg.Sync.Protected...)
	if a.cfg.Path == "" {
		return p
	}
	abs, err1 := filepath.Abs(dir)
	cfg, err2 := filepath.Abs(a.cfg.Path)
	if err1 != nil || err2 != nil {
		return p
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if real, err := filepath.EvalSymlinks(cfg); err == nil {
		cfg = real
	}
	if rel, err := filepath.Rel(abs, cfg); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		p = append(p, "/"+globEscape(filepath.ToSlash(rel)))
	}
	return p
}

// globEscape quotes the characters a gitignore pattern treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\!#`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
