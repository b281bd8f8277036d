package workspace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/local"
)

// gitignoreNames are the names of the generated trees: plain ones, and
// ones with the bytes gitignore patterns treat specially (spaces at the
// end, brackets, '!', '#', '*', '?', a backslash).
var gitignoreNames = []string{
	"a", "b", "ab", "abc", "x.o", "y.log", "keep.log", "a b", "sp ", "sp  ",
	"[a]", "!n", "#h", "q?", "st*r", `back\slash`, "Dir", "d1", "z]",
}

// gitignoreAtoms are the pieces generated patterns are made of: names,
// wildcards, bracket expressions (negated, ranges, classes, a leading
// ']', unclosed), escapes and '**'.
var gitignoreAtoms = []string{
	"a", "b", "ab", "x", ".o", ".log", "sp", " ", `\ `, "d", "1", "keep",
	"*", "?", "**", "*.o", "[ab]", "[!a]", "[^a]", "[a-c]", "[]a]", "[!]]",
	"[[:alpha:]]", "[[:digit:]]", "[[:space:]]", `[\]]`, "[ab", "[[:bogus:]]",
	`\[a]`, `\!n`, `\#h`, `q\?`, `st\*r`, `\\`, "z]", "Dir", "[Dd]ir",
}

// gitignoreLine makes one pattern line: atoms joined by nothing or '/',
// with perhaps a '!', a leading '/', '**/' or a trailing '/', '/**', and
// trailing spaces, escaped or not.
func gitignoreLine(r *rand.Rand) string {
	var b strings.Builder
	switch r.IntN(6) {
	case 0:
		b.WriteString("!")
	case 1:
		b.WriteString("/")
	case 2:
		b.WriteString("**/")
	}
	for i := range 1 + r.IntN(3) {
		if i > 0 && r.IntN(3) == 0 {
			b.WriteString("/")
		}
		b.WriteString(gitignoreAtoms[r.IntN(len(gitignoreAtoms))])
	}
	switch r.IntN(7) {
	case 0:
		b.WriteString("/")
	case 1:
		b.WriteString("/**")
	case 2:
		b.WriteString("  ")
	case 3:
		b.WriteString(`\ `)
	}
	return b.String()
}

// gitignoreTree writes a tree of files and directories named from
// gitignoreNames, at most three deep, under dir.
func gitignoreTree(t testing.TB, r *rand.Rand, dir string) {
	t.Helper()
	for range 14 {
		p := dir
		for range 1 + r.IntN(3) {
			p = filepath.Join(p, gitignoreNames[r.IntN(len(gitignoreNames))])
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			continue // a file is in the way: another shape of tree
		}
		os.WriteFile(p, []byte("x\n"), 0o644)
	}
}

// gitIgnored asks git which of the paths under dir (files and
// directories, .git aside) `git check-ignore --no-index` calls ignored,
// and returns every path with git's answer.
func gitIgnored(t testing.TB, dir string) map[string]bool {
	t.Helper()
	all := map[string]bool{}
	var in bytes.Buffer
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		all[filepath.ToSlash(rel)] = false
		in.WriteString(filepath.ToSlash(rel) + "\x00")
		return nil
	})
	cmd := exec.Command("git", "check-ignore", "--no-index", "-z", "--stdin")
	cmd.Dir, cmd.Stdin = dir, &in
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: nothing ignored
		t.Fatalf("git check-ignore: %v", err)
	}
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p != "" {
			all[p] = true
		}
	}
	return all
}

// pushedPaths pushes dir through the local backend, as `runbox sync`
// would into any sandbox, and lists what arrived.
func pushedPaths(t testing.TB, dir string) map[string]bool {
	t.Helper()
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	remote := filepath.Join(t.TempDir(), "ws")
	o := Options{Task: "gi", Dir: dir, StateDir: filepath.Join(t.TempDir(), "state"), Remote: remote}
	if _, err := Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	got := map[string]bool{}
	filepath.WalkDir(remote, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(remote, p); err == nil && rel != "." {
			got[filepath.ToSlash(rel)] = true
		}
		return err
	})
	return got
}

// scannedPaths lists what the push's scan of dir keeps: the same walk
// and matcher as Push, without a sandbox (cheap enough to fuzz).
func scannedPaths(t testing.TB, dir string) map[string]bool {
	t.Helper()
	tree, _, _, err := scanLocal(&Options{Dir: dir}, nil)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	got := map[string]bool{}
	for p := range tree {
		got[p] = true
	}
	return got
}

// checkAgainstGit writes the .gitignore files (directory → lines) into
// dir, a git work tree, and fails unless kept (pushedPaths, or
// scannedPaths) lists exactly the paths git does not ignore.
func checkAgainstGit(t testing.TB, dir string, ignores map[string][]string, kept func(testing.TB, string) map[string]bool) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	for d, lines := range ignores {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, ".gitignore"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := gitIgnored(t, dir)
	got := kept(t, dir)
	var diffs []string
	for p, ignored := range want {
		if got[p] == ignored {
			verdict := map[bool]string{true: "git ignores it, Push sent it", false: "git keeps it, Push left it out"}[ignored]
			diffs = append(diffs, p+": "+verdict)
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Errorf(".gitignore files %q:\n%s", ignores, strings.Join(diffs, "\n"))
	}
}

// firstDir is a directory of the tree under dir ("" when it has none).
func firstDir(dir string) string {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			return e.Name()
		}
	}
	return ""
}

func needGit(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"git", "tar"} { // tar: the local backend's tree transfer
		if _, err := exec.LookPath(tool); err != nil {
			integration.Skip(t, "no %s: %v", tool, err)
		}
	}
}

// TestPush_GitignoreAsGit: what a push leaves out is what git ignores,
// decided by git itself (`git check-ignore --no-index`) on the same tree:
// bracket expressions, escaped and plain trailing spaces, negation, '**',
// directory-only and anchored patterns, a .gitignore in a subdirectory.
// The named rows are the cases the matcher once got wrong; the rest are
// generated from a fixed seed.
func TestPush_GitignoreAsGit(t *testing.T) {
	needGit(t)
	for _, tc := range []struct {
		name  string
		files []string
		root  []string
		sub   []string // a/.gitignore
	}{
		{"escaped trailing space", []string{"sp ", "sp", "a/sp "}, []string{`sp\ `}, nil},
		{"plain trailing spaces trimmed", []string{"sp ", "sp"}, []string{"sp   "}, nil},
		{"leading ] in a set", []string{"z]", "a/b", "]"}, []string{"[]]"}, nil},
		{"negated set keeps /", []string{"a/b", "ab", "axb"}, []string{"a[!x]b"}, nil},
		{"caret negation", []string{"ab", "bb"}, []string{"[^a]b"}, nil},
		{"class", []string{"a1", "ab"}, []string{"a[[:digit:]]"}, nil},
		{"unknown class matches nothing", []string{"ab", "a:"}, []string{"a[[:bogus:]]", "b"}, nil},
		{"unclosed set matches nothing", []string{"[ab", "a"}, []string{"[ab"}, nil},
		{"reversed range", []string{"b", "c"}, []string{"[c-a]"}, nil},
		{"escaped bang and hash", []string{"!n", "#h", "n"}, []string{`\!n`, `\#h`}, nil},
		{"negation under an ignored directory", []string{"d1/keep.log", "d1/x.log"}, []string{"d1/", "!d1/keep.log"}, nil},
		{"negation", []string{"keep.log", "y.log"}, []string{"*.log", "!keep.log"}, nil},
		{"double star", []string{"a/b/c/x.o", "x.o", "a/x.o"}, []string{"a/**/x.o"}, nil},
		{"trailing double star", []string{"a/b", "a/c/d", "ab"}, []string{"a/**"}, nil},
		{"directory only", []string{"b/c", "a/b"}, []string{"b/"}, nil},
		{"anchored in a subdirectory", []string{"a/ab", "a/d1/ab", "ab"}, nil, []string{"/ab"}},
		{"subdirectory overrides root", []string{"a/y.log", "y.log"}, []string{"*.log"}, []string{"!y.log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ignores := map[string][]string{"": tc.root}
			if tc.sub != nil {
				ignores["a"] = tc.sub
			}
			checkAgainstGit(t, dir, ignores, pushedPaths)
		})
	}
	r := rand.New(rand.NewPCG(26, 4))
	for i := range 40 {
		dir := t.TempDir()
		gitignoreTree(t, r, dir)
		ignores := map[string][]string{"": nil}
		if subdir := firstDir(dir); subdir != "" {
			ignores[subdir] = nil
		}
		for d := range ignores {
			for range 1 + r.IntN(4) {
				ignores[d] = append(ignores[d], gitignoreLine(r))
			}
		}
		checkAgainstGit(t, dir, ignores, pushedPaths)
		if t.Failed() {
			t.Fatalf("generated case %d differs from git (above)", i)
		}
	}
}

// FuzzScan_GitignoreAsGit holds the push's scan to git's verdict for any
// root .gitignore over a fixed tree (go test -fuzz FuzzScan_GitignoreAsGit).
func FuzzScan_GitignoreAsGit(f *testing.F) {
	needGit(f)
	for _, seed := range []string{"*.o\n!keep.log\n", "[]a]\n", "sp\\ \n", "a/**/b\n/ab/\n", "[!a-c]*\n", "**\n!*/\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, gitignore string) {
		if strings.ContainsRune(gitignore, 0) {
			t.Skip()
		}
		dir := t.TempDir()
		gitignoreTree(t, rand.New(rand.NewPCG(1, 2)), dir)
		checkAgainstGit(t, dir, map[string][]string{"": {gitignore}}, scannedPaths)
	})
}
