package workspace

import "testing"

// TestMatcher_Gitignore: the subset of gitignore that the push honours,
// each row a (patterns, path, is-dir) → excluded case as git decides it.
func TestMatcher_Gitignore(t *testing.T) {
	for _, tc := range []struct {
		base string
		pats []string
		path string
		dir  bool
		want bool
	}{
		{"", []string{"*.o"}, "main.o", false, true},
		{"", []string{"*.o"}, "deep/in/x.o", false, true},
		{"", []string{"*.o"}, "main.c", false, false},
		{"", []string{"build/"}, "build", true, true},
		{"", []string{"build/"}, "build", false, false}, // a file named build
		{"", []string{"build/"}, "sub/build", true, true},
		{"", []string{"/build"}, "sub/build", true, false}, // anchored
		{"", []string{"/build"}, "build", false, true},
		{"", []string{"doc/*.txt"}, "doc/a.txt", false, true},
		{"", []string{"doc/*.txt"}, "doc/x/a.txt", false, false}, // * stays in a name
		{"", []string{"doc/**/*.txt"}, "doc/x/y/a.txt", false, true},
		{"", []string{"**/logs"}, "a/b/logs", true, true},
		{"", []string{"a/**"}, "a/b/c", false, true},
		{"", []string{"*.log", "!keep.log"}, "keep.log", false, false},
		{"", []string{"*.log", "!keep.log"}, "drop.log", false, true},
		{"", []string{"file?.txt"}, "file1.txt", false, true},
		{"", []string{"file[0-9].txt"}, "filex.txt", false, false},
		{"", []string{"# comment"}, "# comment", false, false},
		{"sub", []string{"*.tmp"}, "sub/x.tmp", false, true},
		{"sub", []string{"*.tmp"}, "x.tmp", false, false}, // only under its directory
		{"sub", []string{"/only"}, "sub/only", false, true},
		{"sub", []string{"/only"}, "sub/x/only", false, false},
		{"", []string{".env*"}, "cfg/.env.local", false, true},
	} {
		m := &matcher{}
		for _, p := range tc.pats {
			m.add(tc.base, []byte(p+"\n"))
		}
		if got := m.match(tc.path, tc.dir); got != tc.want {
			t.Errorf("patterns %q in %q: match(%q, dir=%v) = %v; want %v", tc.pats, tc.base, tc.path, tc.dir, got, tc.want)
		}
	}
}

// TestMatcher_ProtectedDirectory: a protected directory covers what is in
// it, however deep.
func TestMatcher_ProtectedDirectory(t *testing.T) {
	m := newMatcher(DefaultProtected)
	for path, want := range map[string]bool{
		".git/config": true, ".git/hooks/pre-commit": true, "sub/.git/HEAD": true,
		".env": true, ".envrc": true, "app/.env.production": true,
		".runbox/x": true, "runbox.yaml": true,
		"src/main.go": false, "git/config": false, "environment.txt": false,
	} {
		if got := m.matchPath(path, false); got != want {
			t.Errorf("protected(%q) = %v; want %v", path, got, want)
		}
	}
}

// TestCheckLink: links stay inside the tree or are refused.
func TestCheckLink(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		ok           bool
	}{
		{"a", "b", true},
		{"d/a", "../b", true},
		{"d/a", "../../b", false},
		{"a", "/etc", false},
		{"a", "..", false},
		{"d/e/a", "../../x/../y", true},
		{"a", "", false},
	} {
		if err := checkLink(tc.name, tc.target); (err == nil) != tc.ok {
			t.Errorf("checkLink(%q, %q) = %v; want ok=%v", tc.name, tc.target, err, tc.ok)
		}
	}
}

// TestCleanRel: only plain relative names can be written.
func TestCleanRel(t *testing.T) {
	for name, ok := range map[string]bool{
		"a.txt": true, "d/a.txt": true, "caf\xe9": true, "with space": true,
		"": false, "/etc/x": false, "../x": false, "a/../../x": false, "a/./b": false, "a//b": false, "a/": false, "nul\x00": false,
	} {
		if err := cleanRel(name); (err == nil) != ok {
			t.Errorf("cleanRel(%q) = %v; want ok=%v", name, err, ok)
		}
	}
}
