package gitguard_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/gitguard"
)

// tree makes n directories (ten files each, a repository at the top)
// under a new temporary directory.
func tree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	for i := range n {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("e%05d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), nil, 0o644)
		}
	}
	return root
}

// BenchmarkCheck is what a command pays after it ends in a workspace of
// n directories where nothing git reads changed, against the baseline of
// a bare filepath.WalkDir of the same tree.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{100, 5000} {
		root := tree(b, n)
		since := time.Now().Add(time.Hour) // nothing counts as changed
		b.Run(fmt.Sprintf("dirs=%d/check", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := gitguard.Check(context.Background(), root, gitguard.Options{Since: since}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("dirs=%d/check-session", n), func(b *testing.B) {
			var t gitguard.Tree // a session's memory of the workspace
			for b.Loop() {
				if _, err := gitguard.Check(context.Background(), root, gitguard.Options{Since: since, Tree: &t}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("dirs=%d/walkdir-baseline", n), func(b *testing.B) {
			for b.Loop() {
				filepath.WalkDir(root, func(string, fs.DirEntry, error) error { return nil })
			}
		})
	}
}
