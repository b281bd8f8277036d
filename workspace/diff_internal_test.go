package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// TestHunks_PatchAccepts: for texts with changes at the start, the end,
// far apart and close together, with and without a last newline, the
// hunks turn the old text into the new one when patch applies them.
func TestHunks_PatchAccepts(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		integration.Skip(t, "no patch program: %v", err)
	}
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	plain := lines(40, func(i int) string { return "line " + string(rune('a'+i%26)) })
	for _, tc := range []struct{ name, a, b string }{
		{"first line", "x\ny\nz\n", "X\ny\nz\n"},
		{"last line", "x\ny\nz\n", "x\ny\nZ\n"},
		{"far apart", plain, strings.Replace(strings.Replace(plain, "line c\n", "C\n", 1), "line x\n", "X\n", 1)},
		{"close together", plain, strings.Replace(strings.Replace(plain, "line c\n", "C\n", 1), "line g\n", "G\n", 1)},
		{"added newline at end", "a\nb", "a\nb\n"},
		{"removed newline at end", "a\nb\n", "a\nb"},
		{"insert only", "a\nb\n", "a\nnew\nb\n"},
		{"to empty", "a\nb\n", ""},
		{"repeated lines", "a\na\na\nb\na\na\n", "a\na\nb\nb\na\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "f.txt")
			if err := os.WriteFile(f, []byte(tc.a), 0o644); err != nil {
				t.Fatal(err)
			}
			e := &Entry{Path: "f.txt", Type: TypeFile, Mode: 0o644}
			d := section("f.txt", e, e, []byte(tc.a), []byte(tc.b))
			cmd := exec.Command("patch", "-p1", "--batch", "--no-backup-if-mismatch")
			cmd.Dir, cmd.Stdin = dir, strings.NewReader(d)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("patch: %v\n%s\ndiff:\n%s", err, out, d)
			}
			got, _ := os.ReadFile(f)
			if string(got) != tc.b {
				t.Errorf("patched = %q; want %q\ndiff:\n%s", got, tc.b, d)
			}
		})
	}
}

// TestSection_Binary: a binary file gets git's one-line note, no hunks.
func TestSection_Binary(t *testing.T) {
	e := &Entry{Path: "b.bin", Type: TypeFile, Mode: 0o644}
	d := section("b.bin", e, e, []byte("a\x00b"), []byte("a\x00c"))
	if !strings.Contains(d, "Binary files a/b.bin and b/b.bin differ\n") || strings.Contains(d, "@@") {
		t.Errorf("binary diff = %q", d)
	}
}
