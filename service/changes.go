package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/statedir"
	"github.com/runbox/runbox/undo"
)

// ErrNoJournal is returned by [Session.Undo] and [Session.ChangeSteps]
// when the session cannot record changes: its backend keeps no journal
// (neither runbox on this machine nor an agent inside), or its workspace
// is the root directory.
var ErrNoJournal = errors.New("this session cannot record or undo changes")

// labelMax bounds a step's label: the command line, cut.
const labelMax = 160

// journal is a session's change journal, opened on first use.
type journal struct {
	once   sync.Once
	j      envs.ChangeJournal
	err    error
	warned atomic.Bool // the error was said, in one command's result
}

// UndoOptions is the journal's options from the configuration.
func (s *Service) UndoOptions() undo.Options {
	w := s.opts.Config.Workspace
	return undo.Options{Exclude: w.ChangesExclude, MaxBytes: int64(w.UndoMax), Logger: s.log}
}

// HostJournal opens the journal runbox keeps on this machine for the
// workspace directory dir, in its state directory (undo/ there, one
// journal per directory; see [Service.JournalDir]).
func (s *Service) HostJournal(dir string) (*undo.Journal, error) {
	root, err := s.journalRoot(dir)
	if err != nil {
		return nil, err
	}
	jdir, err := s.journalDir(root)
	if err != nil {
		return nil, err
	}
	return undo.Open(root, jdir, s.UndoOptions())
}

// journalRoot is the workspace dir as a journal knows it: absolute, its
// links resolved; never the root directory or the home directory.
func (s *Service) journalRoot(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", fmt.Errorf("undo: workspace %s: %w", dir, err)
	}
	if root == "/" {
		return "", fmt.Errorf("undo: the workspace is the root directory: %w", ErrNoJournal)
	}
	if home := s.opts.Getenv("HOME"); home != "" && sameFile(home, root) {
		// A home directory holds everything the user has: walking it
		// before and after every command, and mirroring it, is not a
		// workspace's cost.
		return "", fmt.Errorf("undo: the workspace is the home directory %s (run in a project's directory): %w", home, ErrNoJournal)
	}
	return root, nil
}

// JournalDir is where the journal of the workspace dir is kept: a
// directory of its own under undo/ in runbox's state directory, named by
// a hash of the workspace's resolved path.
func (s *Service) JournalDir(dir string) (string, error) {
	root, err := s.journalRoot(dir)
	if err != nil {
		return "", err
	}
	return s.journalDir(root)
}

// journalDir is JournalDir for a root journalRoot returned.
func (s *Service) journalDir(root string) (string, error) {
	state := s.stateDir()
	if state == "" {
		return "", fmt.Errorf("undo: no state directory (set HOME or RUNBOX_STATE_DIR): %w", ErrNoJournal)
	}
	parent, err := statedir.Prepare(filepath.Join(state, "undo"))
	if err != nil {
		return "", err
	}
	return undo.DirFor(parent, root), nil
}

// journal returns the session's change journal, opening it (and, for a
// backend that keeps it inside its environment, the environment) on
// first use. The workspace is the spec's directory, else the directory
// commands start in.
func (ss *Session) journal(ctx context.Context) (envs.ChangeJournal, error) {
	jr := &ss.changes
	jr.once.Do(func() { jr.j, jr.err = ss.openJournal(ctx) })
	return jr.j, jr.err
}

func (ss *Session) openJournal(ctx context.Context) (envs.ChangeJournal, error) {
	p, err := ss.svc.providers.Lookup(ss.Backend)
	if err != nil {
		return nil, err
	}
	if p.OnThisMachine {
		dir := ss.spec.Dir
		if dir == "" {
			dir = ss.svc.workingDir()
		}
		j, err := ss.svc.HostJournal(dir)
		if err != nil {
			return nil, err
		}
		return envs.HostJournal(j), nil
	}
	env, err := ss.Env(ctx)
	if err != nil {
		return nil, err
	}
	jr, ok := env.(envs.Journaler)
	if !ok {
		return nil, fmt.Errorf("backend %s: %w", ss.Backend, ErrNoJournal)
	}
	return jr.Journal(ctx, ss.spec.Dir, ss.svc.UndoOptions())
}

// beginChanges takes the checkpoint before c when the session records
// changes. A journal that fails does not fail the command: the returned
// warning says what was not recorded.
func (ss *Session) beginChanges(ctx context.Context, c envs.Command) (envs.ChangeRecorder, string) {
	if !ss.recordChanges {
		return nil, ""
	}
	j, err := ss.journal(ctx)
	if err != nil {
		// The journal cannot open: said once, not in every result, and
		// for a session that cannot have one (ErrNoJournal) only when
		// the user asked for it.
		if ss.changes.warned.Swap(true) || errors.Is(err, ErrNoJournal) && !ss.changesAsked {
			return nil, ""
		}
		return nil, "changes not recorded: " + Message(err)
	}
	rec, err := j.Begin(ctx, label(CommandLine(c)))
	if err != nil {
		return nil, "changes not recorded: " + Message(err)
	}
	return rec, ""
}

// endChanges takes the checkpoint after a command and puts what changed
// in its result (without one, what changed is left for the next step).
func endChanges(ctx context.Context, rec envs.ChangeRecorder, warn string, res *envs.Result) {
	var r *undo.Record
	var err error
	if rec != nil {
		r, err = rec.End(context.WithoutCancel(ctx))
	}
	if res == nil {
		return
	}
	if warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}
	if err != nil {
		res.Warnings = append(res.Warnings, "changes not recorded: "+Message(err))
	}
	res.Changes = r
}

// Undo restores the session's workspace to its state before a command
// (package undo says how, and when it refuses).
func (ss *Session) Undo(ctx context.Context, o undo.UndoOptions) (*undo.Undone, error) {
	j, err := ss.journal(ctx)
	if err != nil {
		return nil, err
	}
	return j.Undo(ctx, o)
}

// ChangeSteps lists the steps of the session's change journal.
func (ss *Session) ChangeSteps(ctx context.Context) ([]undo.Step, error) {
	j, err := ss.journal(ctx)
	if err != nil {
		return nil, err
	}
	return j.Steps(ctx)
}

// closeJournal releases the session's journal, if it opened one.
func (ss *Session) closeJournal() {
	jr := &ss.changes
	jr.once.Do(func() { jr.err = ErrNoJournal }) // never opened: never will be
	if jr.j != nil {
		jr.j.Close()
	}
}

// label is a step's name for a command line: the line, cut short.
func label(line string) string {
	r := []rune(line)
	if len(r) <= labelMax {
		return line
	}
	return string(r[:labelMax-1]) + "…"
}

// changeProcess is a started command whose changes are recorded when it
// has exited.
type changeProcess struct {
	envs.Process
	rec  envs.ChangeRecorder
	warn string

	once sync.Once
	res  envs.Result
}

// Wait is the process's Wait, then the checkpoint after it.
func (p *changeProcess) Wait(ctx context.Context) (envs.ExitStatus, error) {
	st, err := p.Process.Wait(ctx)
	p.once.Do(func() { endChanges(ctx, p.rec, p.warn, &p.res) })
	return st, err
}

// Changes says what the command changed, once Wait returned.
func (p *changeProcess) Changes() *undo.Record { return p.res.Changes }

// ChangeWarnings are the journal's warnings about this command.
func (p *changeProcess) ChangeWarnings() []string { return p.res.Warnings }

// SandboxDenials passes on the process's own (envs.Denier).
func (p *changeProcess) SandboxDenials() []envs.Violation { return denialsOf(p.Process) }
