package undo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/undo"
)

// TestCheckpoint_DropsOldestStepsOverTheBound: with a store bound that
// holds only two earlier versions, the third command drops the oldest
// step, says so, and undo to it fails with ErrUnknownStep while the
// newer steps can still be undone. Breaks if the bound is ignored or the
// wrong end of the history is dropped.
func TestCheckpoint_DropsOldestStepsOverTheBound(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	version := func(n string) []byte { return []byte(strings.Repeat(n, 30)) }
	must(t, os.WriteFile(filepath.Join(root, "f"), version("0"), 0o644))
	state := filepath.Join(t.TempDir(), "state")
	j := openAt(t, root, state, undo.Options{MaxBytes: 100})
	var recs []*undo.Record
	var snaps []tree
	for _, n := range []string{"1", "2", "3"} {
		snaps = append(snaps, snapshot(t, root))
		recs = append(recs, command(t, j, "write "+n, func() { must(t, os.WriteFile(filepath.Join(root, "f"), version(n), 0o644)) }))
	}
	if recs[0].Dropped != 0 || recs[1].Dropped != 0 || recs[2].Dropped != 1 {
		t.Fatalf("dropped = %d, %d, %d; want 0, 0, 1 (30 bytes of mirror and 30 per step under a bound of 100)",
			recs[0].Dropped, recs[1].Dropped, recs[2].Dropped)
	}
	steps, err := j.Steps(ctx)
	must(t, err)
	if len(steps) != 2 || steps[0].Seq != recs[1].Step || steps[0].Bytes != 30 {
		t.Errorf("steps = %+v; want the last two, each keeping 30 bytes", steps)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{To: recs[0].Step}); !errors.Is(err, undo.ErrUnknownStep) {
		t.Errorf("Undo(To: dropped step) = %v; want ErrUnknownStep", err)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{To: recs[1].Step}); err != nil {
		t.Fatalf("Undo(To: %d) = %v", recs[1].Step, err)
	}
	requireSame(t, snaps[1], snapshot(t, root), true)
	if n := countObjects(t, state); n != 1 {
		t.Errorf("objects left = %d; want 1 (the mirror of f)", n)
	}
}

// countObjects counts the content objects a journal keeps in state.
func countObjects(t *testing.T, state string) int {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(state, "objects"))
	must(t, err)
	return len(des)
}

// TestUndo_FileOverMaxFileBytesIsNotKept: a file above MaxFileBytes is
// tracked by metadata only: a command that changes it lists it in
// NotKept and undo refuses with a NotKeptError naming it, without
// changing anything. A chmod alone can still be undone, and so can the
// creation of a big file (undo removes it). Breaks if undo claims to
// restore content it never had.
func TestUndo_FileOverMaxFileBytesIsNotKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	big := filepath.Join(root, "big.bin")
	must(t, os.WriteFile(big, make([]byte, 5000), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "small"), []byte("s"), 0o644))
	j := open(t, root, undo.Options{MaxFileBytes: 1000})

	before := snapshot(t, root)
	rec := command(t, j, "chmod", func() { must(t, os.Chmod(big, 0o600)) })
	if got := kinds(rec.Changes); !slices.Equal(got, []string{"big.bin mode file"}) {
		t.Errorf("chmod record = %q; want a mode change", got)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo of a chmod on a file not kept = %v", err)
	}
	requireSame(t, before, snapshot(t, root), true)

	rec = command(t, j, "grow", func() { run(t, root, "echo more >> big.bin; echo t > small") })
	if !slices.Equal(rec.NotKept, []string{"big.bin"}) {
		t.Errorf("not kept = %q; want [big.bin]", rec.NotKept)
	}
	changed := snapshot(t, root)
	_, err := j.Undo(ctx, undo.UndoOptions{})
	var nk *undo.NotKeptError
	if !errors.Is(err, undo.ErrNotKept) || !errors.As(err, &nk) || !slices.Equal(nk.Paths, []string{"big.bin"}) {
		t.Fatalf("Undo of a change to a file not kept = %v; want a NotKeptError naming big.bin", err)
	}
	requireSame(t, changed, snapshot(t, root), true)

	rec = command(t, j, "make big", func() { must(t, os.WriteFile(filepath.Join(root, "big2"), make([]byte, 2000), 0o644)) })
	if !slices.Equal(rec.NotKept, []string{"big2"}) {
		t.Errorf("not kept = %q; want [big2]", rec.NotKept)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo of the creation of a big file = %v", err)
	}
	requireSame(t, changed, snapshot(t, root), true)
}

// TestCheckpoint_MirrorOverTheBoundKeepsNoNewContent: when the mirror
// alone would exceed MaxBytes, new content is not kept and the record
// says so. Breaks if the store grows past its bound.
func TestCheckpoint_MirrorOverTheBoundKeepsNoNewContent(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a"), make([]byte, 60), 0o644))
	j := open(t, root, undo.Options{MaxBytes: 100})
	rec := command(t, j, "add", func() {
		must(t, os.WriteFile(filepath.Join(root, "b"), []byte(strings.Repeat("b", 30)), 0o644))
		must(t, os.WriteFile(filepath.Join(root, "c"), []byte(strings.Repeat("c", 30)), 0o644))
	})
	if len(rec.NotKept) != 1 {
		t.Errorf("not kept = %q; want one of b and c (60+30 fit in 100, 60+30+30 do not)", rec.NotKept)
	}
}

// TestStore_ObjectNamesHideTheirHash: an object's file name is not the
// SHA-256 of what it holds, so a command that can list the store but not
// read a file cannot confirm a guess at that file's content by hashing
// the guess. Breaks if objects are named by their plain hash again.
func TestStore_ObjectNamesHideTheirHash(t *testing.T) {
	root := t.TempDir()
	secret := []byte("DB_PASSWORD=hunter2\n")
	must(t, os.WriteFile(filepath.Join(root, "secret.env"), secret, 0o600))
	state := filepath.Join(t.TempDir(), "state")
	j := openAt(t, root, state, undo.Options{})
	command(t, j, "true", func() {})
	sum := sha256.Sum256(secret)
	names := objectNames(t, state)
	if len(names) == 0 {
		t.Fatal("no object kept: the test proves nothing")
	}
	if slices.Contains(names, hex.EncodeToString(sum[:])) {
		t.Errorf("objects %q name secret.env's content by its SHA-256", names)
	}
}

// TestStore_PlainNamedObjectsAreRenamedNotLost: a journal kept before
// objects had keyed names (objects named by their plain hash, no key)
// still undoes after it is opened again: its objects are renamed, not
// swept away as unknown. Breaks if opening such a journal loses its
// history.
func TestStore_PlainNamedObjectsAreRenamedNotLost(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	f := filepath.Join(root, "f")
	must(t, os.WriteFile(f, []byte("before\n"), 0o644))
	state := filepath.Join(t.TempDir(), "state")
	j := openAt(t, root, state, undo.Options{})
	before := snapshot(t, root)
	command(t, j, "edit", func() { must(t, os.WriteFile(f, []byte("after\n"), 0o644)) })
	must(t, j.Close())
	// Back to the old layout: each object under its plain hash, no key.
	for _, name := range objectNames(t, state) {
		p := filepath.Join(state, "objects", name)
		b, err := os.ReadFile(p)
		must(t, err)
		sum := sha256.Sum256(b)
		must(t, os.Rename(p, filepath.Join(state, "objects", hex.EncodeToString(sum[:]))))
	}
	must(t, os.Remove(filepath.Join(state, "key")))

	j = openAt(t, root, state, undo.Options{})
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo after reopening an old journal: %v", err)
	}
	requireSame(t, before, snapshot(t, root), false)
}

// objectNames lists the file names of a journal's objects.
func objectNames(t *testing.T, state string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(state, "objects"))
	must(t, err)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// TestUndo_SparseFilesStaySparse: a file that is mostly holes (made for
// nothing by truncate -s) costs the store, and the workspace when undo
// puts it back, its written blocks, not its size: six such files,
// deleted and brought back, would otherwise take six times their size in
// disk (one object serves them all in the store, past any bound).
// Breaks if a copy writes the zeros out.
func TestUndo_SparseFilesStaySparse(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const size = 64 << 20
	var names []string
	for i := range 6 {
		p := filepath.Join(root, fmt.Sprintf("sp%d", i))
		f, err := os.Create(p)
		must(t, err)
		must(t, f.Truncate(size))
		_, err = f.WriteAt([]byte("tail"), size-4)
		must(t, err)
		must(t, f.Close())
		names = append(names, p)
	}
	if blocks(t, names[0]) > 1<<20 {
		t.Skip("this file system does not keep holes")
	}
	state := filepath.Join(t.TempDir(), "state")
	j := openAt(t, root, state, undo.Options{MaxBytes: 1 << 30})
	before := snapshot(t, root)
	command(t, j, "rm", func() {
		for _, p := range names {
			must(t, os.Remove(p))
		}
	})
	if _, err := j.Undo(ctx, undo.UndoOptions{}); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	requireSame(t, before, snapshot(t, root), false)
	for _, p := range names {
		if b := blocks(t, p); b > 1<<20 {
			t.Errorf("%s takes %d bytes of disk after undo; want its written blocks only (the file is %d bytes, all but 4 of them a hole)", filepath.Base(p), b, size)
		}
	}
	for _, name := range objectNames(t, state) {
		if b := blocks(t, filepath.Join(state, "objects", name)); b > 1<<20 {
			t.Errorf("object %s takes %d bytes of disk; want its written blocks only", name, b)
		}
	}
}

// blocks is the disk a file takes, in bytes.
func blocks(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks * 512
}
