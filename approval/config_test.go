package approval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlobMatch_Cases(t *testing.T) {
	tests := []struct {
		glob, s string
		want    bool
	}{
		{"git push*", "git push --force", true},
		{"git push*", "git pull", false},
		{"*rm*", "sudo rm -rf x", true},
		{"r?", "rm", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"*", "", true},
		{"a*b*c", "a/x/b/y/c", true},
		{"a*b*c", "a/x/b/y/d", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.glob, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v; want %v", tt.glob, tt.s, got, tt.want)
		}
	}
	if s := "a*b?c\\d"; !globMatch(EscapeGlob(s), s) || globMatch(EscapeGlob(s), "aXbYc\\d") {
		t.Errorf("EscapeGlob(%q) = %q does not match exactly", s, EscapeGlob(s))
	}
}

// TestConfig_AppendAllowKeepsFile: writing an approval keeps comments and
// other keys, creates missing keys, and does not duplicate entries.
func TestConfig_AppendAllowKeepsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := appendAllow(file, "make deploy"); err != nil {
		t.Fatalf("appendAllow on a missing file = %v", err)
	}
	if got, _ := readAllowList(file); len(got) != 1 || got[0] != "make deploy" {
		t.Errorf("allow list = %q; want [make deploy]", got)
	}
	orig := "# top comment\nserve:\n  port: 8080 # inline\napproval:\n  allow:\n    - git-push-force # reviewed\n"
	os.WriteFile(file, []byte(orig), 0o600)
	for range 2 {
		if err := appendAllow(file, "make deploy"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(file)
	for _, want := range []string{"# top comment", "port: 8080 # inline", "git-push-force # reviewed", `"make deploy"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("file lacks %q:\n%s", want, b)
		}
	}
	if strings.Count(string(b), "make deploy") != 1 {
		t.Errorf("entry written twice:\n%s", b)
	}
	os.WriteFile(file, []byte("approval:\n  allow: oops\n"), 0o600)
	if err := appendAllow(file, "x"); err == nil {
		t.Error("appendAllow into a non-list allow succeeded; want an error")
	}
	if _, err := New(Options{ConfigFile: file}); err != nil {
		t.Errorf("New with a scalar allow = %v", err)
	}
	os.WriteFile(file, []byte("approval: [\n"), 0o600)
	if _, err := New(Options{ConfigFile: file}); err == nil {
		t.Error("New with a broken config file succeeded; want an error")
	}
}
