// Package testtree reads a directory tree the way tests of undo judge
// it: path by path, its type and permission bits, and a regular file's
// content hash or a link's target. It is written without runbox's own
// code, so that it can judge runbox's.
package testtree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// State is what the tree under root holds, by path relative to root
// (root itself is "."). .git/objects is left out: undo never records it.
func State(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == filepath.Join(".git", "objects") {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:])
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Same fails the test, naming the paths (twenty at most), when got is not
// want; what says when.
func Same(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	var diff []string
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if got[p] != want[p] {
			diff = append(diff, fmt.Sprintf("%s: want %q, got %q", p, want[p], got[p]))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diff = append(diff, fmt.Sprintf("%s: not there before, still there: %q", p, got[p]))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		t.Fatalf("%s: the tree is not as it was:\n%s", what, strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
}
