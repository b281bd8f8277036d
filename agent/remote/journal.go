package remote

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

var _ envs.Journaler = (*Env)(nil)

// Journal returns the change journal the agent keeps for the workspace
// root inside the sandbox (an empty root: the agent session's initial
// directory). Each call goes to the agent in use at the time: after the
// agent was lost, the next one finds the same journal on the sandbox's
// disk; a recreated sandbox starts a new one. Without the agent (the
// native exec) there is none: [envs.ErrUnsupported].
func (e *Env) Journal(ctx context.Context, root string, o undo.Options) (envs.ChangeJournal, error) {
	j := &journal{e: e, root: root, opts: o}
	if _, _, err := j.current(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// journal is a [envs.ChangeJournal] kept by whichever agent serves the
// sandbox.
type journal struct {
	e    *Env
	root string
	opts undo.Options
}

// current is the journal as the agent in use now keeps it, with that
// agent's backend.
func (j *journal) current(ctx context.Context) (envs.ChangeJournal, envs.Environment, error) {
	j.e.mu.Lock()
	be, err := j.e.liveLocked(ctx)
	j.e.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	jr, ok := be.(envs.Journaler)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no change journal without runbox's agent (%s): %w", j.e.opts.Name, j.e.Fallback(), envs.ErrUnsupported)
	}
	cj, err := jr.Journal(ctx, j.root, j.opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", j.e.opts.Name, err)
	}
	return cj, be, nil
}

// do runs fn on the current journal; a lost agent is marked so, as a
// command would find it.
func (j *journal) do(ctx context.Context, op string, fn func(envs.ChangeJournal) error) error {
	cj, be, err := j.current(ctx)
	if err != nil {
		return err
	}
	if err := fn(cj); err != nil {
		if isLost(err) {
			return j.e.lost(ctx, be, op, err)
		}
		return fmt.Errorf("%s: %w", j.e.opts.Name, err)
	}
	return nil
}

func (j *journal) Begin(ctx context.Context, label string) (rec envs.ChangeRecorder, err error) {
	err = j.do(ctx, "checkpoint", func(cj envs.ChangeJournal) (err error) {
		rec, err = cj.Begin(ctx, label)
		return err
	})
	return rec, err
}

func (j *journal) Steps(ctx context.Context) (steps []undo.Step, err error) {
	err = j.do(ctx, "list the steps", func(cj envs.ChangeJournal) (err error) {
		steps, err = cj.Steps(ctx)
		return err
	})
	return steps, err
}

func (j *journal) Undo(ctx context.Context, o undo.UndoOptions) (u *undo.Undone, err error) {
	err = j.do(ctx, "undo", func(cj envs.ChangeJournal) (err error) {
		u, err = cj.Undo(ctx, o)
		return err
	})
	return u, err
}

// Close releases nothing: the agent closes its journals when its stream
// ends, and what they recorded stays in the sandbox.
func (j *journal) Close() error { return nil }
