package undo

import (
	"context"
	"slices"
)

// Command is a command between [Journal.Begin] and [Command.End].
type Command struct {
	j          *Journal
	ref        cmdRef
	concurrent []string // labels of the commands open when it began
	dropped    int      // steps its Begin dropped for the bound
	rec        *Record  // set by End; guarded by j.mu
}

// Record is what changed while a command was open.
type Record struct {
	// Step is the command's first step: undo with To: Step restores the
	// state from before it. 0 when nothing changed (or only times, which
	// are not listed).
	Step    int64    `json:"step,omitempty"`
	Changes []Change `json:"changes,omitempty"` // sorted by path, at most MaxListed
	More    int      `json:"more,omitempty"`    // changes not listed
	// NotKept lists (at most MaxListed) changed files whose content, before
	// or after, the journal does not keep (larger than MaxFileBytes,
	// unreadable, or the store is full). Undo cannot bring back content
	// it does not have, and refuses to revert a change that needs it.
	NotKept []string `json:"not_kept,omitempty"`
	// Dropped counts the oldest steps dropped by this command's
	// checkpoints (its Begin and End) to stay under MaxBytes.
	Dropped int `json:"dropped,omitempty"`
	// Excluded is what is never recorded (the defaults and the options).
	Excluded []string `json:"excluded,omitempty"`
	// Concurrent names the other commands open at the same time: their
	// changes may be in this record, and undoing this command undoes
	// theirs made meanwhile.
	Concurrent []string `json:"concurrent,omitempty"`
}

// Begin takes a checkpoint and opens a command named label. Changes found
// since the previous checkpoint become a step of their own: made outside
// any command when none was open meanwhile. The command stays open, on
// disk, until [Command.End] or until this process exits.
func (j *Journal) Begin(ctx context.Context, label string) (*Command, error) {
	var c *Command
	err := j.locked(ctx, func(tx *txn) error {
		if _, err := j.checkpoint(ctx, tx); err != nil {
			return err
		}
		c = &Command{j: j, dropped: j.trim(tx)}
		c.ref = cmdRef{ID: j.m.NextCmd, Label: label, Begin: j.m.NextSeq}
		for _, o := range j.m.Cmds {
			c.concurrent = append(c.concurrent, o.Ref.Label)
		}
		oc := j.self
		oc.Ref = c.ref
		j.m.NextCmd++
		j.m.Cmds = append(j.m.Cmds, oc)
		tx.dirty = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Label is the label the command was begun with.
func (c *Command) Label() string {
	c.j.mu.Lock()
	defer c.j.mu.Unlock()
	return c.ref.Label
}

// End takes a checkpoint, closes the command and returns what changed
// while it was open: the union of its steps. Calling End again returns
// the same record without another checkpoint.
func (c *Command) End(ctx context.Context) (*Record, error) {
	j := c.j
	j.mu.Lock()
	rec := c.rec
	j.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	err := j.locked(ctx, func(tx *txn) error {
		if c.rec != nil {
			return nil
		}
		if _, err := j.checkpoint(ctx, tx); err != nil {
			return err
		}
		rec, err := j.recordOf(c)
		if err != nil {
			return err
		}
		rec.Dropped = c.dropped + j.trim(tx)
		j.m.Cmds = slices.DeleteFunc(j.m.Cmds, func(o openCmd) bool { return o.Ref.ID == c.ref.ID })
		tx.dirty = true
		c.rec = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.rec, nil
}

// recordOf folds the steps that name c into its record.
func (j *Journal) recordOf(c *Command) (*Record, error) {
	steps, err := j.readSteps(func(s *stepMeta) bool {
		return s.Seq >= c.ref.Begin && slices.ContainsFunc(s.Cmds, func(r cmdRef) bool { return r.ID == c.ref.ID })
	})
	if err != nil {
		return nil, err
	}
	rec := &Record{Excluded: slices.Clone(j.ex.list)}
	names := slices.Clone(c.concurrent)
	var ds [][]diff
	for _, s := range steps {
		ds = append(ds, s.Diffs)
		for _, r := range s.Cmds {
			if r.ID != c.ref.ID {
				names = append(names, r.Label)
			}
		}
	}
	rec.Changes, rec.More, rec.NotKept = describe(fold(ds), j.opts.MaxListed)
	if len(steps) > 0 && len(rec.Changes) > 0 {
		rec.Step = steps[0].Seq
	}
	slices.Sort(names)
	rec.Concurrent = slices.Compact(names)
	return rec, nil
}

// Relabel renames the open command. A background job learns its id only
// once it has started, after the Begin that must come before its first
// byte runs; its steps from now on carry the new label. A step already
// made while the command was open keeps the label it was made with.
func (c *Command) Relabel(ctx context.Context, label string) error {
	j := c.j
	return j.locked(ctx, func(tx *txn) error {
		c.ref.Label = label
		for i := range j.m.Cmds {
			if j.m.Cmds[i].Ref.ID == c.ref.ID {
				j.m.Cmds[i].Ref.Label = label
				tx.dirty = true
			}
		}
		return nil
	})
}
