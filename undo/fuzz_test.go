package undo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/undo"
)

// The property: after any history of commands and edits made outside
// them, undo to any command's step leaves every path a reverted step
// changed as it was when that command began, and every other path as it
// was. Edits outside commands that clash with reverted ones make undo
// refuse without Force (changing nothing) and are reverted with it. The
// model below decides all that from the tests' own snapshots, without
// the package's help.

// chooser makes the random choices of a history.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// bytesChooser takes its choices from the fuzzer's bytes; when they run
// out every choice is 0, which ends the history.
type bytesChooser struct{ b []byte }

func (c *bytesChooser) intn(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0]) % n
	c.b = c.b[1:]
	return v
}

// names are the paths histories play with: few enough that operations
// collide, nested enough for directories to replace files and back.
var names = []string{"a", "b", "d", "d/e", "d/f", "d/g", "d/g/h", "x"}

var contents = []string{"", "1", "hello\n", "hello\nworld\n", "other"}

// operate makes one change under root, as a command would; a change that
// makes no sense in the current tree (writing below a file) is skipped.
func operate(r *os.Root, c chooser) {
	p := names[c.intn(len(names))]
	q := names[c.intn(len(names))]
	mode := []os.FileMode{0o644, 0o600, 0o755, 0o444}[c.intn(4)]
	switch c.intn(10) {
	case 0, 1:
		r.MkdirAll(path.Dir(p), 0o755)
		writeNonblock(r, p, contents[c.intn(len(contents))], os.O_TRUNC)
	case 2:
		writeNonblock(r, p, contents[c.intn(len(contents))], os.O_APPEND)
	case 3:
		r.RemoveAll(p)
	case 4:
		r.MkdirAll(p, []os.FileMode{0o755, 0o700}[c.intn(2)])
	case 5:
		r.Symlink([]string{"a", "d", "d/e", "../outside", "/nonexistent"}[c.intn(5)], p)
	case 6:
		if fi, err := r.Lstat(p); err == nil && fi.IsDir() {
			mode = []os.FileMode{0o755, 0o700, 0o750}[c.intn(3)]
		}
		r.Chmod(p, mode)
	case 7:
		r.Rename(p, q)
	case 8:
		if dir, err := r.OpenFile(path.Dir(p), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0); err == nil {
			unix.Mkfifoat(int(dir.Fd()), path.Base(p), 0o644)
			dir.Close()
		}
	case 9:
		if f, err := r.OpenFile(p, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			f.Truncate(int64(c.intn(3)))
			f.Close()
		}
	}
}

// writeNonblock writes a file without blocking on a fifo.
func writeNonblock(r *os.Root, p, data string, flag int) {
	f, err := r.OpenFile(p, os.O_WRONLY|os.O_CREATE|unix.O_NONBLOCK|flag, 0o644)
	if err != nil {
		return
	}
	f.WriteString(data)
	f.Close()
}

// batch is what happened between two checkpoints: one command, or the
// edits made outside commands between two of them.
type batch struct {
	label   string // "" outside commands
	step    int64  // the command's first step
	pre     tree   // when it began
	changes map[string]bool
}

// changed lists what differs between two trees, times aside: path ->
// only the mode changed.
func changed(pre, post tree) map[string]bool {
	out := map[string]bool{}
	for p, a := range post {
		b, ok := pre[p]
		a.Mtime, b.Mtime = 0, 0
		switch {
		case !ok:
			out[p] = false
		case a != b:
			b.Mode = a.Mode
			out[p] = a == b
		}
	}
	for p := range pre {
		if _, ok := post[p]; !ok {
			out[p] = false
		}
	}
	return out
}

func under(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

// clash says whether an outside change at q must be reverted with a
// reverted change at p: the same path, inside a directory replaced or
// removed, or around what was changed when q itself was replaced.
func clash(p string, pModeOnly bool, q string, qModeOnly bool) bool {
	return p == q || (under(q, p) && !pModeOnly) || (under(p, q) && !qModeOnly)
}

func batchesClash(reverted, outside map[string]bool) bool {
	for p, pm := range reverted {
		for q, qm := range outside {
			if clash(p, pm, q, qm) {
				return true
			}
		}
	}
	return false
}

// model says what undo to batches[k] does: whether it conflicts without
// Force, the tree after it with Force, and the commands it reverts.
func model(batches []batch, k int, now tree) (conflict bool, want tree, labels []string) {
	revert := map[int]bool{}
	paths := map[string]bool{}
	for i := k; i < len(batches); i++ {
		if batches[i].label != "" {
			revert[i] = true
			merge(paths, batches[i].changes)
		}
	}
	for grew := true; grew; {
		grew = false
		for i := k + 1; i < len(batches); i++ {
			if !revert[i] && batchesClash(paths, batches[i].changes) {
				conflict, revert[i], grew = true, true, true
				merge(paths, batches[i].changes)
			}
		}
	}
	want = tree{}
	for p, n := range now {
		if !has(paths, p) {
			want[p] = n
		}
	}
	for p := range paths {
		if n, ok := batches[k].pre[p]; ok {
			want[p] = n
		}
	}
	for i := len(batches) - 1; i >= k; i-- {
		if revert[i] && batches[i].label != "" && batches[i].step != 0 {
			labels = append(labels, batches[i].label)
		}
	}
	return conflict, want, labels
}

func has(m map[string]bool, p string) bool { _, ok := m[p]; return ok }

// merge adds changes to paths: a path is mode-only when all its changes
// are.
func merge(paths, changes map[string]bool) {
	for p, modeOnly := range changes {
		if has(paths, p) {
			modeOnly = modeOnly && paths[p]
		}
		paths[p] = modeOnly
	}
}

// history plays a random history on a fresh root and checks one undo
// against the model.
func history(t *testing.T, c chooser) {
	root := t.TempDir()
	r, err := os.OpenRoot(root)
	must(t, err)
	defer r.Close()
	for range 3 + c.intn(5) {
		operate(r, c)
	}
	j := open(t, root, undo.Options{})
	now := snapshot(t, root)
	var batches []batch
	for i := range 1 + c.intn(4) {
		if c.intn(2) == 0 {
			batches = append(batches, outside(t, r, c, root, &now))
		}
		pre, label := now, fmt.Sprintf("c%d", i)
		rec := command(t, j, label, func() {
			for range c.intn(5) {
				operate(r, c)
			}
		})
		now = snapshot(t, root)
		b := batch{label: label, step: rec.Step, pre: pre, changes: changed(pre, now)}
		checkRecord(t, rec, b.changes)
		batches = append(batches, b)
	}
	if c.intn(2) == 0 {
		batches = append(batches, outside(t, r, c, root, &now))
	}
	checkUndo(t, j, root, c, batches, now)
}

func outside(t *testing.T, r *os.Root, c chooser, root string, now *tree) batch {
	pre := *now
	for range 1 + c.intn(3) {
		operate(r, c)
	}
	*now = snapshot(t, root)
	return batch{pre: pre, changes: changed(pre, *now)}
}

// checkRecord compares a command's record with what the snapshots say
// it changed.
func checkRecord(t *testing.T, rec *undo.Record, changes map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	for _, ch := range rec.Changes {
		got[ch.Path] = ch.Kind == undo.KindMode
		if ch.From != "" {
			got[ch.From] = false
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(changes) {
		t.Fatalf("record changes %v; the snapshots say %v", kinds(rec.Changes), changes)
	}
	if len(changes) > 0 && rec.Step == 0 {
		t.Fatalf("record has changes but no step")
	}
}

func checkUndo(t *testing.T, j *undo.Journal, root string, c chooser, batches []batch, now tree) {
	t.Helper()
	ctx := context.Background()
	var candidates []int
	for i, b := range batches {
		if b.label != "" && b.step != 0 {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		if _, err := j.Undo(ctx, undo.UndoOptions{}); !errors.Is(err, undo.ErrNothing) {
			t.Fatalf("Undo with no command step = %v; want ErrNothing", err)
		}
		return
	}
	k := candidates[c.intn(len(candidates))]
	conflict, want, labels := model(batches, k, now)
	done, err := j.Undo(ctx, undo.UndoOptions{To: batches[k].step})
	switch {
	case conflict && !errors.Is(err, undo.ErrConflict):
		t.Fatalf("Undo(To: %d) = %v; the model says it conflicts", batches[k].step, err)
	case conflict:
		requireSame(t, now, snapshot(t, root), true)
		done, err = j.Undo(ctx, undo.UndoOptions{To: batches[k].step, Force: true})
	}
	if err != nil {
		t.Fatalf("Undo(To: %d, Force: %v) = %v", batches[k].step, conflict, err)
	}
	requireSame(t, want, snapshot(t, root), false)
	if !slices.Equal(done.Commands, labels) {
		t.Errorf("undone commands = %q; want %q", done.Commands, labels)
	}
	if rec := command(t, j, "after", func() {}); rec.Step != 0 {
		t.Fatalf("a command that changes nothing after the undo made step %d: %v", rec.Step, kinds(rec.Changes))
	}
}

// TestUndo_RandomHistories checks the property on many random histories.
func TestUndo_RandomHistories(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	for seed := range n {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			history(t, randChooser{rand.New(rand.NewPCG(uint64(seed), 7))})
		})
	}
}

// FuzzUndo checks the property on histories the fuzzer's bytes choose.
func FuzzUndo(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0, 1, 2, 0, 1, 1, 3, 4, 5, 1, 2, 3, 7, 7, 2, 1, 9, 0, 1, 5, 2, 1})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"))
	f.Fuzz(func(t *testing.T, b []byte) {
		history(t, &bytesChooser{b: slices.Clone(b)})
	})
}
