package undo

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// UndoOptions says what [Journal.Undo] reverts.
type UndoOptions struct {
	// To: restore the state from before step To, reverting every command
	// step from To on. 0 means before the first step of the last command
	// that changed more than times.
	To int64
	// Force also reverts the steps made outside any command that changed
	// the same paths (otherwise Undo refuses with a [*ConflictError]).
	Force bool
}

// Undone is what [Journal.Undo] did.
type Undone struct {
	Steps []int64 `json:"steps"` // reverted, newest first
	// Commands names, newest first, the commands whose changes were
	// reverted (a command that changed only times is not named).
	Commands []string `json:"commands"`
	// Restored describes what undo changed in the workspace, as changes
	// it made: a file it brought back is "created". Sorted by path, at
	// most MaxListed.
	Restored []Change `json:"restored"`
	More     int      `json:"more,omitempty"`
	// Skipped lists special files (sockets, devices) that undo cannot
	// make and left absent; fifos are made.
	Skipped []string `json:"skipped,omitempty"`
	// Dropped counts the oldest steps dropped afterwards to stay under
	// MaxBytes (the checkpoint undo takes first may have kept new
	// content).
	Dropped int `json:"dropped,omitempty"`
}

// Undo takes a checkpoint (so that edits made since the last one are
// seen), then reverts every command step from [UndoOptions].To on,
// restoring each path it changed to its state before the earliest of
// them. Steps made outside any command are left alone, with their paths,
// unless they changed a path a reverted step changed (the same path, one
// inside it, or a directory holding it when it was replaced or removed):
// then Undo refuses with a [*ConflictError] (errors.Is [ErrConflict]),
// or with Force reverts those steps too. It refuses with a
// [*NotKeptError] when content it needs is not kept, with [ErrNothing]
// when there is no command step to revert, and with [ErrUnknownStep]
// when To names no step in the journal. A refusal changes nothing in the
// workspace.
//
// Reverted steps leave the journal; their numbers are not used again.
// ctx bounds the checkpoint; once restoring begins it runs to the end.
func (j *Journal) Undo(ctx context.Context, o UndoOptions) (*Undone, error) {
	var out *Undone
	err := j.locked(ctx, func(tx *txn) error {
		if _, err := j.checkpoint(ctx, tx); err != nil {
			return err
		}
		if tx.dirty { // the checkpoint stands, whatever the undo decides
			if err := j.commit(tx); err != nil {
				return err
			}
		}
		p, err := j.plan(o)
		if err != nil {
			return err
		}
		out, err = j.revert(tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// plan is what an undo will do.
type plan struct {
	steps   []*stepFile    // every step from To on, oldest first
	revert  map[int64]bool // the ones to revert
	targets []target       // sorted by path
}

// target is the state undo gives one path.
type target struct {
	path string
	want *entry // nil: absent
	now  *entry // as the last checkpoint saw it; nil: absent
	// same: the file on disk already has the content wanted (only its
	// mode and times are set).
	same bool
}

func (j *Journal) plan(o UndoOptions) (*plan, error) {
	to, err := j.undoFrom(o.To)
	if err != nil {
		return nil, err
	}
	p := &plan{revert: map[int64]bool{}}
	if p.steps, err = j.readSteps(func(s *stepMeta) bool { return s.Seq >= to }); err != nil {
		return nil, err
	}
	for _, s := range p.steps {
		if len(s.Cmds) > 0 {
			p.revert[s.Seq] = true
		}
	}
	if len(p.revert) == 0 {
		return nil, fmt.Errorf("%w: no command changed anything from step %d on", ErrNothing, to)
	}
	if err := p.resolveConflicts(o.Force); err != nil {
		return nil, err
	}
	p.targets = p.targetsFrom(j.index)
	return p, j.checkKept(p.targets)
}

// undoFrom finds the first step to revert.
func (j *Journal) undoFrom(to int64) (int64, error) {
	if to != 0 {
		if !slices.ContainsFunc(j.m.Steps, func(s stepMeta) bool { return s.Seq == to }) {
			return 0, j.unknownStep(to)
		}
		return to, nil
	}
	for i := len(j.m.Steps) - 1; i >= 0; i-- {
		cmds := j.m.Steps[i].Cmds
		if len(cmds) == 0 || j.m.Steps[i].Changes == 0 {
			continue
		}
		last := slices.MaxFunc(cmds, func(a, b cmdRef) int { return int(a.ID - b.ID) })
		if j.m.DroppedThrough >= last.Begin {
			return 0, fmt.Errorf("%w: the first steps of command %q were dropped to stay under the storage bound", ErrUnknownStep, last.Label)
		}
		for _, s := range j.m.Steps {
			if slices.ContainsFunc(s.Cmds, func(r cmdRef) bool { return r.ID == last.ID }) {
				return s.Seq, nil
			}
		}
	}
	return 0, ErrNothing
}

func (j *Journal) unknownStep(to int64) error {
	switch {
	case to <= j.m.DroppedThrough:
		return fmt.Errorf("%w: step %d was dropped to stay under the storage bound or undone", ErrUnknownStep, to)
	case to >= j.m.NextSeq || to < 0:
		return fmt.Errorf("%w: step %d was never made", ErrUnknownStep, to)
	}
	return fmt.Errorf("%w: step %d was undone", ErrUnknownStep, to)
}

// touched indexes the paths reverted steps change, for conflicts.
type touched struct {
	at     map[string]bool // path -> some change there is more than a mode change
	sorted []string
}

func (t *touched) add(ds []diff) {
	for _, d := range ds {
		k := d.kind()
		if k == "" {
			continue
		}
		t.at[d.Path] = t.at[d.Path] || k != KindMode
	}
	t.sorted = t.sorted[:0]
	for p := range t.at {
		t.sorted = append(t.sorted, p)
	}
	slices.Sort(t.sorted)
}

// clash says whether a change at p conflicts with a reverted one: at the
// same path, inside a directory a reverted step replaced or removed, or
// (when p itself was replaced or removed, not just chmod'ed) around
// something a reverted step changed.
func (t *touched) clash(p string, modeOnly bool) bool {
	if _, ok := t.at[p]; ok {
		return true
	}
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if t.at[p[:i]] {
			return true
		}
	}
	if modeOnly {
		return false
	}
	i := sort.SearchStrings(t.sorted, p+"/")
	return i < len(t.sorted) && strings.HasPrefix(t.sorted[i], p+"/")
}

// resolveConflicts finds the outside steps that clash with reverted
// ones. Without force they are the error; with force they are reverted
// too, and what they changed clashes in turn.
func (p *plan) resolveConflicts(force bool) error {
	t := &touched{at: map[string]bool{}}
	for _, s := range p.steps {
		if p.revert[s.Seq] {
			t.add(s.Diffs)
		}
	}
	ce := &ConflictError{}
	for grew := true; grew; {
		grew = false
		for _, s := range p.steps {
			if p.revert[s.Seq] {
				continue
			}
			paths := clashes(s.Diffs, t)
			switch {
			case len(paths) == 0:
			case force:
				p.revert[s.Seq], grew = true, true
				t.add(s.Diffs)
			default:
				ce.Paths, ce.Steps = append(ce.Paths, paths...), append(ce.Steps, s.Seq)
			}
		}
	}
	if len(ce.Steps) > 0 {
		slices.Sort(ce.Paths)
		ce.Paths = slices.Compact(ce.Paths)
		return ce
	}
	return nil
}

func clashes(ds []diff, t *touched) []string {
	var out []string
	for _, d := range ds {
		if k := d.kind(); k != "" && t.clash(d.Path, k == KindMode) {
			out = append(out, d.Path)
		}
	}
	return out
}

// targetsFrom gives each path a reverted step changed the state before
// the earliest of them. A path only a step that stays changed for real is
// left to it, and so is a path whose only reverted change is its times
// when a later step that stays touched it.
func (p *plan) targetsFrom(index map[string]entry) []target {
	type seen struct {
		first    *diff // earliest reverted diff
		real     bool  // some reverted diff changed more than times
		kept     bool  // some step that stays changed it for real
		keptTime bool  // some step that stays, later than first, touched it
	}
	by := map[string]*seen{}
	for _, s := range p.steps {
		for i := range s.Diffs {
			d := &s.Diffs[i]
			x := by[d.Path]
			if x == nil {
				x = &seen{}
				by[d.Path] = x
			}
			switch {
			case p.revert[s.Seq] && x.first == nil:
				x.first, x.real = d, d.kind() != ""
			case p.revert[s.Seq]:
				x.real = x.real || d.kind() != ""
			case d.kind() != "":
				x.kept = true
			case x.first != nil:
				x.keptTime = true
			}
		}
	}
	var out []target
	for path, x := range by {
		if x.first == nil || x.kept || (!x.real && x.keptTime) {
			continue
		}
		out = append(out, newTarget(path, x.first.Before, index))
	}
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.path, b.path) })
	return out
}

func newTarget(path string, want *entry, index map[string]entry) target {
	t := target{path: path, want: want}
	if e, ok := index[path]; ok {
		t.now = &e
	}
	t.same = want != nil && t.now != nil && want.isFile() && t.now.isFile() && want.sameContent(t.now)
	return t
}

// checkKept refuses an undo that needs content the store does not have.
func (j *Journal) checkKept(ts []target) error {
	var missing []string
	for _, t := range ts {
		if t.want == nil || !t.want.isFile() || t.same {
			continue
		}
		if !t.want.Kept || !j.store.has(t.want.Hash) {
			missing = append(missing, t.path)
		}
	}
	if len(missing) > 0 {
		return &NotKeptError{Paths: missing}
	}
	return nil
}

// revert restores the plan's targets, then drops the reverted steps and
// brings the index up to date with what was written.
func (j *Journal) revert(tx *txn, p *plan) (*Undone, error) {
	rs := j.newRestorer(p.targets)
	if err := rs.run(); err != nil {
		return nil, err
	}
	rs.reindex(j.index)
	out := &Undone{Skipped: rs.skipped}
	for i := len(p.steps) - 1; i >= 0; i-- {
		if s := p.steps[i]; p.revert[s.Seq] {
			out.Steps = append(out.Steps, s.Seq)
			tx.gone = append(tx.gone, s.Seq)
			for _, c := range slices.Backward(s.Cmds) {
				if hasChanges(s.Diffs) && !slices.Contains(out.Commands, c.Label) {
					out.Commands = append(out.Commands, c.Label)
				}
			}
		}
	}
	j.m.Steps = slices.DeleteFunc(j.m.Steps, func(s stepMeta) bool { return p.revert[s.Seq] })
	tx.dirty, tx.index, tx.refs = true, true, true
	out.Dropped = j.trim(tx) // what its checkpoint kept may exceed the bound
	out.Restored, out.More, _ = describe(undoDiffs(p.targets), j.opts.MaxListed)
	return out, nil
}

func hasChanges(ds []diff) bool {
	return slices.ContainsFunc(ds, func(d diff) bool { return d.kind() != "" })
}

// undoDiffs describes the targets as the changes undo makes.
func undoDiffs(ts []target) []diff {
	ds := make([]diff, 0, len(ts))
	for _, t := range ts {
		ds = append(ds, diff{Path: t.path, Before: t.now, After: t.want})
	}
	return ds
}
