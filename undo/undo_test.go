package undo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runbox/runbox/undo"
)

// TestUndo_OutsideEditToSamePathConflicts: an edit made between commands
// to a file the last command changed must not be lost silently. Without
// Force undo refuses and changes nothing; with Force both are reverted.
// Breaks if undo overwrites the user's own edit without asking.
func TestUndo_OutsideEditToSamePathConflicts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	rec := command(t, j, "gen", func() { must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("generated"), 0o644)) })
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("my own edit"), 0o644))
	edited := snapshot(t, root)

	_, err := j.Undo(ctx, undo.UndoOptions{})
	var ce *undo.ConflictError
	if !errors.Is(err, undo.ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("Undo after an outside edit of the same file = %v; want a ConflictError", err)
	}
	if !slices.Equal(ce.Paths, []string{"a.txt"}) || len(ce.Steps) != 1 || ce.Steps[0] <= rec.Step {
		t.Errorf("conflict = %+v; want path a.txt and one outside step after %d", ce, rec.Step)
	}
	requireSame(t, edited, snapshot(t, root), true)

	done, err := j.Undo(ctx, undo.UndoOptions{Force: true})
	if err != nil {
		t.Fatalf("Undo(Force) = %v", err)
	}
	if len(done.Steps) != 2 || !slices.Equal(done.Commands, []string{"gen"}) {
		t.Errorf("Undo(Force) reverted steps %v of %q; want the outside step and gen's", done.Steps, done.Commands)
	}
	requireSame(t, before, snapshot(t, root), true)
}

// TestUndo_OutsideEditElsewhereSurvives: an edit between commands to a
// path the command did not touch is left exactly as it is. Breaks if undo
// rolls the whole tree back to a checkpoint.
func TestUndo_OutsideEditElsewhereSurvives(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	command(t, j, "gen", func() { must(t, os.WriteFile(filepath.Join(root, "d/x.txt"), []byte("generated"), 0o644)) })
	must(t, os.WriteFile(filepath.Join(root, "b.txt"), []byte("my own edit"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("notes"), 0o644))
	edited := snapshot(t, root, "d")

	done, err := j.Undo(ctx, undo.UndoOptions{})
	if err != nil {
		t.Fatalf("Undo = %v", err)
	}
	if got := kinds(done.Restored); !slices.Equal(got, []string{"d/x.txt modified file"}) {
		t.Errorf("restored = %q; want only d/x.txt", got)
	}
	after := snapshot(t, root)
	requireSame(t, edited, snapshot(t, root, "d"), true)
	for p, n := range before {
		if filepath.Dir(p) == "d" || p == "d" {
			if after[p] != n {
				t.Errorf("%s = %s; want %s", p, after[p].describe(), n.describe())
			}
		}
	}
	steps, err := j.Steps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || len(steps[0].Commands) != 0 || steps[0].Changes != 2 {
		t.Errorf("steps after undo = %+v; want only the outside step with its 2 changes", steps)
	}
}

// TestUndo_ToFirstOfTwoCommands reverts both and names both. Breaks if
// To reverts only its own step or loses the labels.
func TestUndo_ToFirstOfTwoCommands(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	first := command(t, j, "first", func() { run(t, root, "echo one >> a.txt; mkdir -p new/dir; echo x > new/dir/f") })
	second := command(t, j, "second", func() { run(t, root, "rm -r d; echo two >> a.txt; chmod 600 b.txt") })
	if first.Step == 0 || second.Step <= first.Step {
		t.Fatalf("steps %d, %d; want two increasing steps", first.Step, second.Step)
	}
	done, err := j.Undo(ctx, undo.UndoOptions{To: first.Step})
	if err != nil {
		t.Fatalf("Undo(To: %d) = %v", first.Step, err)
	}
	if !slices.Equal(done.Commands, []string{"second", "first"}) || !slices.Equal(done.Steps, []int64{second.Step, first.Step}) {
		t.Errorf("undone %v %q; want steps [%d %d] of [second first]", done.Steps, done.Commands, second.Step, first.Step)
	}
	requireSame(t, before, snapshot(t, root), true)
	if _, err := j.Undo(ctx, undo.UndoOptions{}); !errors.Is(err, undo.ErrNothing) {
		t.Errorf("Undo with nothing left = %v; want ErrNothing", err)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{To: first.Step}); !errors.Is(err, undo.ErrUnknownStep) {
		t.Errorf("Undo(To: an undone step) = %v; want ErrUnknownStep", err)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{To: 999}); !errors.Is(err, undo.ErrUnknownStep) {
		t.Errorf("Undo(To: 999) = %v; want ErrUnknownStep", err)
	}
}

// TestUndo_LastCommandOnly: without To, only the last command's steps
// are reverted. Breaks if the default reaches further back.
func TestUndo_LastCommandOnly(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	command(t, j, "first", func() { run(t, root, "echo one >> a.txt") })
	middle := snapshot(t, root)
	command(t, j, "second", func() { run(t, root, "echo two >> a.txt; rm b.txt") })
	done, err := j.Undo(ctx, undo.UndoOptions{})
	if err != nil || !slices.Equal(done.Commands, []string{"second"}) {
		t.Fatalf("Undo = %+v, %v; want second undone", done, err)
	}
	requireSame(t, middle, snapshot(t, root), true)
}

// TestUndo_SymlinkedDirectoryDoesNotEscape: a command replaces a
// directory with a link to a directory outside the root; undo must
// remove the link and make the directory again, never writing through
// the link. Breaks if undo follows it and writes into the canary.
func TestUndo_SymlinkedDirectoryDoesNotEscape(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	files(t, root, base)
	files(t, outside, map[string]string{"x.txt": "canary", "y/": ""})
	canary := snapshot(t, outside)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	rec := command(t, j, "swap", func() {
		must(t, os.RemoveAll(filepath.Join(root, "d")))
		must(t, os.Symlink(outside, filepath.Join(root, "d")))
	})
	if got := kinds(rec.Changes); !slices.Contains(got, "d type symlink") {
		t.Fatalf("record = %q; want d to become a symlink", got)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo = %v", err)
	}
	requireSame(t, before, snapshot(t, root), true)
	requireSame(t, canary, snapshot(t, outside), true)
}

// TestUndo_LinkToOutsideIsNotFollowedByTheWalk: a link to a directory
// outside the root is recorded as a link; nothing behind it is walked or
// restored.
func TestUndo_LinkToOutsideIsNotFollowedByTheWalk(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	files(t, root, map[string]string{"out": "-> " + outside})
	j := open(t, root, undo.Options{})
	rec := command(t, j, "write outside", func() { must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644)) })
	if len(rec.Changes) != 0 || rec.Step != 0 {
		t.Errorf("record = %+v; want nothing (the change is outside the root)", rec)
	}
}

// TestEnd_Twice returns the same record without another checkpoint.
func TestEnd_Twice(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	j := open(t, root, undo.Options{})
	c, err := j.Begin(ctx, "once")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	r1, err := c.End(ctx)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "g"), []byte("y"), 0o644))
	r2, err := c.End(ctx)
	must(t, err)
	if r1 != r2 || len(r2.Changes) != 1 {
		t.Errorf("second End = %+v; want the first record %+v", r2, r1)
	}
}

// TestUndo_ExcludedPathsAreLeftAlone: what is excluded is neither
// recorded nor touched by undo, and the record says what is excluded.
func TestUndo_ExcludedPathsAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, map[string]string{"a": "a", "node_modules/x/index.js": "1", "build/out": "o", "sub/build/keep": "k"})
	j := open(t, root, undo.Options{Exclude: []string{"/build"}})
	rec := command(t, j, "install", func() {
		run(t, root, "echo 2 > node_modules/x/index.js; echo p > build/out; echo k2 > sub/build/keep; echo b > a")
	})
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"a modified file", "sub/build/keep modified file"}) {
		t.Errorf("record = %q; want a and sub/build/keep only", got)
	}
	if !slices.Contains(rec.Excluded, "node_modules") || !slices.Contains(rec.Excluded, "/build") {
		t.Errorf("excluded = %q; want the defaults and /build", rec.Excluded)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a": "a", "node_modules/x/index.js": "2\n", "build/out": "p\n", "sub/build/keep": "k"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Errorf("%s = %q after undo; want %q", p, b, want)
		}
	}
}

// TestUndo_OutsideRemovalOfTheDirectoryConflicts: a command deletes a
// file, then the user removes its directory. Undoing the command alone
// would need the directory back, which is the user's change to lose: so
// it conflicts, and with Force both come back. Breaks if conflicts only
// compare equal paths.
func TestUndo_OutsideRemovalOfTheDirectoryConflicts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	command(t, j, "rm", func() { must(t, os.Remove(filepath.Join(root, "d/x.txt"))) })
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	if _, err := j.Undo(ctx, undo.UndoOptions{}); !errors.Is(err, undo.ErrConflict) {
		t.Fatalf("Undo after the user removed the directory = %v; want ErrConflict", err)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{Force: true}); err != nil {
		t.Fatalf("Undo(Force) = %v", err)
	}
	requireSame(t, before, snapshot(t, root), true)
}

// TestUndo_OutsideChmodOfTheDirectoryIsKept: a mode change to the
// directory holding what a command changed is no conflict, and survives.
func TestUndo_OutsideChmodOfTheDirectoryIsKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	command(t, j, "add", func() { must(t, os.WriteFile(filepath.Join(root, "d/new"), []byte("n"), 0o644)) })
	must(t, os.Chmod(filepath.Join(root, "d"), 0o700))
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo = %v", err)
	}
	fi, err := os.Stat(filepath.Join(root, "d"))
	must(t, err)
	if _, err := os.Lstat(filepath.Join(root, "d/new")); !errors.Is(err, os.ErrNotExist) || fi.Mode().Perm() != 0o700 {
		t.Errorf("after undo: d mode %v, d/new err %v; want 0700 kept and d/new gone", fi.Mode().Perm(), err)
	}
}

// TestEnd_OnlyTimesChangedIsNoStep: a command that only moved times
// (a build that rewrote files with the same bytes) reports nothing and
// is not what a plain undo reverts: that would undo nothing visible
// and leave the command that did break something in place.
func TestEnd_OnlyTimesChangedIsNoStep(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files(t, root, base)
	j := open(t, root, undo.Options{})
	before := snapshot(t, root)
	broke := command(t, j, "broke", func() { must(t, os.Remove(filepath.Join(root, "a.txt"))) })
	rec := command(t, j, "rebuild", func() { run(t, root, "cp b.txt tmp && mv tmp b.txt") })
	if rec.Step != 0 || len(rec.Changes) != 0 {
		t.Errorf("record of a command that only moved times = %+v; want no step and no changes", rec)
	}
	done, err := j.Undo(ctx, undo.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done.Commands, []string{"broke"}) || !slices.Contains(done.Steps, broke.Step) {
		t.Errorf("undone %v %q; want broke's step", done.Steps, done.Commands)
	}
	requireSame(t, before, snapshot(t, root), true)
}
