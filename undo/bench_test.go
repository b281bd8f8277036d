package undo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchTree writes 10,000 small files in 500 directories (25 top-level
// directories of 20 subdirectories, 20 files each).
func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	for i := range 25 {
		for k := range 20 {
			dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i), fmt.Sprintf("sub%02d", k))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 20 {
				data := fmt.Appendf(nil, "package p%d_%d\n// file %d\n", i, k, f)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", f)), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return root
}

func benchJournal(b *testing.B, root string) *Journal {
	b.Helper()
	j, err := Open(root, filepath.Join(b.TempDir(), "state"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// benchCommands times commands that change nothing: a Begin and an End
// each.
func benchCommands(b *testing.B, j *Journal) {
	ctx := context.Background()
	for b.Loop() {
		c, err := j.Begin(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.End(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpoint_10000Files is the cost runbox adds to a command
// that changes nothing: a Begin and an End on an unchanged tree.
func BenchmarkCheckpoint_10000Files(b *testing.B) {
	ctx := context.Background()
	j := benchJournal(b, benchTree(b))
	if _, err := j.Begin(ctx, "mirror"); err != nil { // the first checkpoint copies the tree
		b.Fatal(err)
	}
	benchCommands(b, j)
}

// BenchmarkCommand_EmptyWorkspace is the fixed cost of recording a
// command: a Begin and an End where there is nothing to look at, what
// every terminal call of a session that records changes pays at least.
func BenchmarkCommand_EmptyWorkspace(b *testing.B) {
	benchCommands(b, benchJournal(b, b.TempDir()))
}

// BenchmarkFirstCheckpoint_10000Files is the first checkpoint of a
// journal: it hashes and copies every file into the store.
func BenchmarkFirstCheckpoint_10000Files(b *testing.B) {
	ctx := context.Background()
	root := benchTree(b)
	for b.Loop() {
		b.StopTimer()
		j := benchJournal(b, root)
		b.StartTimer()
		if _, err := j.Begin(ctx, "mirror"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalk_10000Files is the journal's walk alone (fstatat relative
// to directory descriptors), to compare with
// BenchmarkReadDirLstat_10000Files.
func BenchmarkWalk_10000Files(b *testing.B) {
	root := benchTree(b)
	dir, err := os.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	n := 0
	w := walker{
		ctx:        context.Background(),
		skip:       newExcluder(defaultExclude).skip,
		dev:        devOf(b, root),
		visit:      func(int, string, string, *unix.Stat_t) error { n++; return nil },
		unreadable: func(string) {},
	}
	for b.Loop() {
		n = 0
		if err := w.walk(int(dir.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	if n != 10_525 {
		b.Fatalf("walked %d entries; want 10,525", n)
	}
}

// BenchmarkReadDirLstat_10000Files is the baseline: filepath.WalkDir
// with an Lstat of every entry.
func BenchmarkReadDirLstat_10000Files(b *testing.B) {
	root := benchTree(b)
	for b.Loop() {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := os.Lstat(p); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil || n != 10_526 {
			b.Fatalf("walked %d entries (%v); want 10,526 with the root", n, err)
		}
	}
}

// BenchmarkReload_10000Files is what another process pays to pick up a
// journal changed under it: reading the meta and a 10,000-entry index.
func BenchmarkReload_10000Files(b *testing.B) {
	ctx := context.Background()
	j := benchJournal(b, benchTree(b))
	if _, err := j.Begin(ctx, "mirror"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		j.mu.Lock()
		j.gen, j.index, j.m = 0, nil, meta{}
		err := j.reload()
		j.mu.Unlock()
		if err != nil || len(j.index) != 10_525 {
			b.Fatalf("reload: %v, %d entries", err, len(j.index))
		}
	}
}

func devOf(b *testing.B, p string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		b.Fatal(err)
	}
	return uint64(st.Dev)
}
