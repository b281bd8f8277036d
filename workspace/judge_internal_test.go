package workspace

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostRefusal_Names: every spelling of .git a file system may take
// for it, git's redirecting files, hook managers' files and shell
// start-up files are refused at any depth; names that merely look alike
// are not.
func TestHostRefusal_Names(t *testing.T) {
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{".git", true},
		{".git/config", true},
		{"a/b/.git", true},
		{"a/.git/hooks/pre-commit", true},
		{".GIT", true},
		{".Git/HEAD", true},
		{".git.", true},
		{".git ", true},
		{".git. . ", true},
		{".git::$INDEX_ALLOCATION", true},
		{"git~1", true},
		{"GIT~1/config", true},
		{"GI7EBA~3", true},
		{".g\u200cit", true},
		{"\ufeff.git", true},
		{".git\u200d/config", true},
		{".gitmodules", true},
		{"GITMOD~1", true},
		{"sub/.gitattributes", true},
		{".gitconfig", true},
		{".lfsconfig", true},
		{".husky/pre-commit", true},
		{".husky/_/husky.sh", true},
		{".githooks/pre-push", true},
		{"lefthook.yml", true},
		{".pre-commit-config.yaml", true},
		{".envrc", true},
		{"a/.bashrc", true},
		{".profile", true},
		{".zshenv", true},
		{".ZSHRC", true},
		// Alike but harmless.
		{".gitignore", false},
		{".github/workflows/ci.yml", false},
		{".gitkeep", false},
		{"git", false},
		{"x.git", false},
		{".git2", false},
		{"my.git/file", false},
		{"git~", false},
		{"git~1x", false},
		{"hooks/pre-commit", false},
		{"src/hooks/useThing.ts", false},
		{"profile", false},
		{"bashrc.example", false},
		{"README.md", false},
	} {
		got := hostRefusal(tc.path)
		if (got != "") != tc.refused {
			t.Errorf("hostRefusal(%q) = %q; want refused=%v", tc.path, got, tc.refused)
		}
	}
}

// TestGitDirLike: a directory is taken for a git directory as git takes
// it (HEAD beside objects/ or refs/, or a commondir file).
func TestGitDirLike(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		dir   string
		want  bool
	}{
		{"HEAD and objects", []string{"d/HEAD", "d/objects"}, "d", true},
		{"HEAD and refs", []string{"d/HEAD", "d/refs"}, "d", true},
		{"commondir", []string{"d/commondir"}, "d", true},
		{"root", []string{"HEAD", "refs"}, ".", true},
		{"HEAD alone", []string{"d/HEAD"}, "d", false},
		{"objects and refs without HEAD", []string{"d/objects", "d/refs"}, "d", false},
		{"another directory", []string{"d/HEAD", "d/refs"}, "e", false},
	} {
		has := func(p string) bool {
			for _, q := range tc.paths {
				if q == p {
					return true
				}
			}
			return false
		}
		if got := gitDirLike(tc.dir, has); got != tc.want {
			t.Errorf("%s: gitDirLike(%q) = %v; want %v", tc.name, tc.dir, got, tc.want)
		}
	}
}

// TestView_Resolve: links resolve as the kernel resolves them, through
// links on disk and links of the change set, and a name that is missing
// counts as a directory that may be made later.
func TestView_Resolve(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b", "sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	over := map[string]*Entry{
		"a/b/lnk": {Type: TypeSymlink, Link: ".."},
		"a/b/new": {Type: TypeFile},
		"gone":    nil,
	}
	v := newView(root, over)
	for _, tc := range []struct {
		name, target, want string
		err                error
	}{
		{"x", "file", "file", nil},
		{"x", "a/b", "a/b", nil},
		{"a/b/x", "lnk", "a", nil},
		{"a/b/x", "lnk/..", ".", nil},
		{"a/b/x", "lnk/../..", "", errLinkOut},
		{"a/b/x", "../../sub/up/a", "a", nil},
		{"sub/x", "up/..", "", errLinkOut},
		{"sub/x", "up/sub/up/sub/up", ".", nil},
		{"x", "missing/../..", "", errLinkOut},
		{"x", "missing/../a", "a", nil},
		{"x", "/etc", "", errLinkOut},
		{"x", "", "", errLinkOut},
		{"x", ".", ".", nil},
		{"a/x", "../..", "", errLinkOut},
	} {
		got, err := v.resolve(tc.name, tc.target)
		if !errors.Is(err, tc.err) || err == nil && got != tc.want {
			t.Errorf("resolve(%q -> %q) = %q, %v; want %q, %v", tc.name, tc.target, got, err, tc.want, tc.err)
		}
	}
	loop := newView(root, map[string]*Entry{"l1": {Type: TypeSymlink, Link: "l2"}, "l2": {Type: TypeSymlink, Link: "l1"}})
	if _, err := loop.resolve("x", "l1"); !errors.Is(err, errLinkLoop) {
		t.Errorf("resolve through a loop = %v; want errLinkLoop", err)
	}
}

// FuzzLinkJudge checks the link judge against the kernel. The input is
// a set of links ("name\ttarget" lines) made for real under a project
// directory that sits in a cage directory. For each link:
//   - one the judge accepts never resolves (by the kernel) outside the
//     project;
//   - the judge gives the same verdict whether the links are on disk or
//     only in the change set laid over an empty directory;
//   - a link the judge accepts never resolves to a path refused by name.
func FuzzLinkJudge(f *testing.F) {
	for _, seed := range []string{
		"sub/lnk\t..\nsub/esc\tlnk/..",
		"a/b/l1\t..\na/b/l2\tl1/..\na/b/l3\tl2/..",
		"x\ty\ny\tx",
		"g\t.git\nsub/h\t../g/hooks",
		"up\t..",
		"in\tsub/../a",
		"d/e\t../../cage-marker",
		"m\tmissing/../../x",
		"a\tb\nb\tc\nc\t..",
		"a\t.\nb\ta/a/a/..",
		"a\t/\na/0\tl",
		"a\t../..\na/b/3\tl",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		links := parseLinks(spec)
		if len(links) == 0 {
			return
		}
		cage := t.TempDir()
		proj := filepath.Join(cage, "proj")
		if err := os.Mkdir(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(proj)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		var made []Entry
		for _, l := range links {
			// Made through the root, and only under real directories, so
			// that no link of the set leads a creation elsewhere.
			if !realDirs(root, path.Dir(l.Path)) {
				continue
			}
			if d := path.Dir(l.Path); d != "." && root.MkdirAll(d, 0o755) != nil {
				continue
			}
			if root.Symlink(l.Link, l.Path) != nil {
				continue
			}
			made = append(made, l)
		}
		onDisk := newView(root, nil)
		over := map[string]*Entry{}
		for _, l := range made {
			over[l.Path] = &Entry{Type: TypeSymlink, Link: l.Link}
		}
		empty := t.TempDir()
		eroot, err := os.OpenRoot(empty)
		if err != nil {
			t.Fatal(err)
		}
		defer eroot.Close()
		inChanges := newView(eroot, over)
		realProj, err := filepath.EvalSymlinks(proj)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range made {
			why, err := onDisk.linkRefusal(l.Path, l.Link)
			if err != nil {
				t.Fatalf("linkRefusal(%q -> %q): %v", l.Path, l.Link, err)
			}
			why2, err := inChanges.linkRefusal(l.Path, l.Link)
			if err != nil {
				t.Fatalf("linkRefusal in changes (%q -> %q): %v", l.Path, l.Link, err)
			}
			if (why == "") != (why2 == "") {
				t.Errorf("%q -> %q: on disk %q, as changes %q", l.Path, l.Link, why, why2)
			}
			if why != "" {
				continue
			}
			real, err := filepath.EvalSymlinks(filepath.Join(proj, filepath.FromSlash(l.Path)))
			if err != nil {
				continue // dangling here: the kernel reaches nothing
			}
			rel, err := filepath.Rel(realProj, real)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%q -> %q accepted, but the kernel resolves it to %s, outside the project", l.Path, l.Link, real)
				continue
			}
			if r := hostRefusal(filepath.ToSlash(rel)); r != "" {
				t.Errorf("%q -> %q accepted, but it resolves to %s (%s)", l.Path, l.Link, rel, r)
			}
		}
	})
}

// realDirs reports whether every existing element of d is a directory
// and not a link.
func realDirs(root *os.Root, d string) bool {
	for p := d; p != "."; p = path.Dir(p) {
		fi, err := root.Lstat(p)
		if err == nil && !fi.IsDir() {
			return false
		}
	}
	return true
}

// parseLinks reads "name\ttarget" lines, keeping at most 8 links whose
// names are clean relative paths and whose targets are relative.
func parseLinks(spec string) []Entry {
	var out []Entry
	seen := map[string]bool{}
	for _, line := range strings.Split(spec, "\n") {
		name, target, ok := strings.Cut(line, "\t")
		if !ok || cleanRel(name) != nil || seen[name] || len(name) > 64 || len(target) > 128 ||
			strings.ContainsRune(target, 0) || target == "" || len(out) == 8 {
			continue
		}
		seen[name] = true
		out = append(out, Entry{Path: name, Type: TypeSymlink, Link: target})
	}
	return out
}

// FuzzHostRefusal: refusal by name does not depend on case, on trailing
// dots and spaces, or on the code points HFS+ ignores, and never panics.
func FuzzHostRefusal(f *testing.F) {
	for _, s := range []string{".git", "a/.gitmodules", ".husky/x", "ok/file", ".envrc", "git~1", ".gitignore"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if hostRefusal(p) == "" {
			return
		}
		els := strings.Split(p, "/")
		for i, el := range els {
			if el != "" && el != "." && el != ".." {
				els[i] = "\u200c" + strings.ToUpper(el) + ". "
			}
		}
		if q := strings.Join(els, "/"); hostRefusal(q) == "" {
			t.Errorf("hostRefusal(%q) refused but hostRefusal(%q) did not", p, q)
		}
	})
}

// TestHooksPath: core.hooksPath is read from the project's .git/config
// when it names a directory inside the project.
func TestHooksPath(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"relative", "[core]\n\thooksPath = tools/hooks\n", "tools/hooks"},
		{"case and quotes", "[Core]\n\tHOOKSPATH = \".husky/_\"\n", ".husky/_"},
		{"last wins", "[core]\nhooksPath = a\n[core]\nhooksPath = b/c/\n", "b/c"},
		{"absolute inside", "[core]\nhooksPath = PROJ/x/hooks\n", "x/hooks"},
		{"absolute outside", "[core]\nhooksPath = /etc/hooks\n", ""},
		{"leaves the project", "[core]\nhooksPath = ../hooks\n", ""},
		{"home", "[core]\nhooksPath = ~/hooks\n", ""},
		{"other section", "[alias]\nhooksPath = x\n", ""},
		{"none", "[core]\n\tbare = false\n", ""},
	} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		conf := strings.ReplaceAll(tc.config, "PROJ", dir)
		if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := hooksPath(root, dir); got != tc.want {
			t.Errorf("%s: hooksPath = %q; want %q", tc.name, got, tc.want)
		}
		root.Close()
	}
}
