package undo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRescan_MatchesWalk is the oracle for the watcher: after every
// batch of random changes (made in the tree, moved in from outside,
// moved out, replaced, renamed), the index a checkpoint builds from the
// watcher's events is the index a whole walk builds.
func TestRescan_MatchesWalk(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	j, err := Open(root, filepath.Join(t.TempDir(), "journal"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(1, seed))
	ch := &churn{t: t, r: r, root: root, outside: outside}
	for batch := range 300 {
		for range 1 + r.IntN(5) {
			ch.step()
		}
		if err := j.locked(ctx, func(tx *txn) error { _, err := j.checkpoint(ctx, tx); return err }); err != nil {
			t.Fatalf("batch %d: checkpoint: %v", batch, err)
		}
		full := j.newScan()
		if err := full.run(ctx); err != nil {
			t.Fatal(err)
		}
		if d := indexDiff(full.next, j.index); d != "" {
			t.Fatalf("seed %d, batch %d, after %v: the watched checkpoint differs from a walk:\n%s", seed, batch, ch.done[max(0, len(ch.done)-5):], d)
		}
	}
	if j.rescans < 100 {
		t.Fatalf("the watcher stood in for %d of 300 checkpoints; want most", j.rescans)
	}
}

// indexDiff says how two indexes differ in what a checkpoint records of
// each path ("" when they agree).
func indexDiff(want, got map[string]entry) string {
	var out string
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for p := range want {
			seen[p] = true
			if !yield(p) {
				return
			}
		}
		for p := range got {
			if !seen[p] && !yield(p) {
				return
			}
		}
	}) {
		w, inW := want[p]
		g, inG := got[p]
		switch {
		case !inW:
			out += fmt.Sprintf("  %s: recorded, but not in the tree\n", p)
		case !inG:
			out += fmt.Sprintf("  %s: in the tree, not recorded\n", p)
		// Not the change time: a hard link made or removed elsewhere
		// moves a file's ctime, and inotify tells only the watchers of
		// that file, not of its directory. Nothing a record lists
		// depends on it.
		case w.Mode != g.Mode || w.Size != g.Size || w.Mtime != g.Mtime || w.Ino != g.Ino || w.Target != g.Target:
			out += fmt.Sprintf("  %s: walk %+v, watched %+v\n", p, w, g)
		case w.isFile() && w.Hash != g.Hash && !w.Hash.isZero() && !g.Hash.isZero():
			out += fmt.Sprintf("  %s: content differs\n", p)
		}
	}
	return out
}

// churn makes random changes to a small tree, the ways commands do.
type churn struct {
	t             *testing.T
	r             *rand.Rand
	root, outside string
	n             int
	done          []string
}

var churnPaths = []string{"a", "b", "d", "d/e", "d/f", "d/g", "d/g/h", "d/g/i", "k", "k/l", "k/l/m", "x"}

func (c *churn) pick() string { return filepath.Join(c.root, churnPaths[c.r.IntN(len(churnPaths))]) }

func (c *churn) step() {
	p, q := c.pick(), c.pick()
	c.n++
	var what string
	switch c.r.IntN(12) {
	case 0:
		what = "write"
		os.WriteFile(p, fmt.Appendf(nil, "v%d\n", c.n), 0o644)
	case 1:
		what = "append"
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.WriteString("more\n")
			f.Close()
		}
	case 2:
		what = "mkdir"
		os.MkdirAll(p, 0o755)
	case 3:
		what = "remove"
		os.RemoveAll(p)
	case 4:
		what = "rename"
		os.Rename(p, q)
	case 5:
		what = "chmod"
		os.Chmod(p, []os.FileMode{0o600, 0o755, 0o700, 0o644}[c.r.IntN(4)])
	case 6:
		what = "touch"
		ts := time.Unix(int64(1e9+c.r.IntN(1e6)), 0)
		os.Chtimes(p, ts, ts)
	case 7:
		what = "symlink"
		os.Remove(p)
		os.Symlink(q, p)
	case 8:
		what = "move in a tree made outside"
		src := filepath.Join(c.outside, fmt.Sprintf("t%d", c.n))
		os.MkdirAll(filepath.Join(src, "s/u"), 0o755)
		os.WriteFile(filepath.Join(src, "s/u/w"), []byte("made outside"), 0o644)
		os.RemoveAll(p)
		os.Rename(src, p)
	case 9:
		what = "move out"
		os.Rename(p, filepath.Join(c.outside, fmt.Sprintf("o%d", c.n)))
	case 10:
		what = "truncate"
		os.Truncate(p, 0)
	case 11:
		what = "hard link"
		os.Link(p, q)
	}
	c.done = append(c.done, what+" "+p[len(c.root):]+" "+q[len(c.root):])
}

// TestRescan_HardLinkedElsewhere: a file written through another name of
// it in another directory (a hard link) is seen changed by the next
// watched checkpoint under both names, though only the written name's
// directory heard of it.
func TestRescan_HardLinkedElsewhere(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.MkdirAll(filepath.Join(root, "e"), 0o755)
	for _, name := range []string{"d/g", "e/h"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j, err := Open(root, filepath.Join(t.TempDir(), "journal"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	checkpoint := func() {
		t.Helper()
		if err := j.locked(ctx, func(tx *txn) error { _, err := j.checkpoint(ctx, tx); return err }); err != nil {
			t.Fatal(err)
		}
	}
	// writeThrough writes content through name at time ts, lets a
	// watched checkpoint run, and wants every name of the file to show
	// the new size and time.
	writeThrough := func(what, content string, ts time.Time, name string, names ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(root, name), ts, ts); err != nil {
			t.Fatal(err)
		}
		rescans := j.rescans
		checkpoint()
		if j.rescans == rescans {
			t.Fatalf("the checkpoint walked the whole tree; want the watcher to stand in")
		}
		for _, p := range append([]string{name}, names...) {
			if e := j.index[p]; e.Size != int64(len(content)) || e.Mtime != ts.UnixNano() {
				t.Errorf("%s after %s: size %d, mtime %d; want the new ones", p, what, e.Size, e.Mtime)
			}
		}
	}
	checkpoint()
	if err := os.Link(filepath.Join(root, "d", "g"), filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	// Past the racy window of the link's own change, the next
	// checkpoints look at neither name again unless told to.
	time.Sleep(3 * time.Duration(racyWindow))
	checkpoint()
	checkpoint()
	writeThrough("the write through x", "two, longer\n", time.Unix(1e9, 0), "x", "d/g")

	// A second name of another file, made and written through between
	// two checkpoints: no checkpoint knew of it before.
	time.Sleep(3 * time.Duration(racyWindow))
	checkpoint()
	checkpoint()
	if err := os.Link(filepath.Join(root, "e", "h"), filepath.Join(root, "y")); err != nil {
		t.Fatal(err)
	}
	writeThrough("a new name was made and written through", "three\n", time.Unix(2e9, 0), "y", "e/h")
}
