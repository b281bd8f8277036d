package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/workspace"
)

// nonUTF8 is a file name that is not UTF-8 (Latin-1 "café.txt").
const nonUTF8 = "caf\xe9.txt"

// makeTree writes the test project three levels below a temporary
// directory (so "../../x" from it is still inside the test's directory)
// and returns the project's path.
func makeTree(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	dir := filepath.Join(top, "a", "b", "proj")
	files := map[string]string{
		"hello.txt":            "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
		"name with spaces.txt": "spaced\n",
		nonUTF8:                "latin\n",
		"deleteme.txt":         "bye\n",
		"script.sh":            "#!/bin/sh\necho hi\n",
		"sub/inner.txt":        "inner\n",
		".gitignore":           "build/\n*.o\n",
		"build/out.txt":        "ignored\n",
		"main.o":               "ignored\n",
		".git/config":          "[core]\n",
		".env":                 "SECRET=1\n",
		"noeol.txt":            "no newline",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	bin := make([]byte, 512)
	for i := range bin {
		bin[i] = byte(i)
	}
	must(t, os.WriteFile(filepath.Join(dir, "bin.dat"), bin, 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
	must(t, os.Symlink("hello.txt", filepath.Join(dir, "link-in")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link-abs")))
	must(t, os.Symlink("../../outside", filepath.Join(dir, "link-up")))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func opts(t *testing.T, dir string) workspace.Options {
	return workspace.Options{Task: "t1", Dir: dir, StateDir: filepath.Join(t.TempDir(), "state")}
}

// copyTree copies dir (with links as links) for a pristine reference.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

// TestPush_SendsTreeAsLinksWithoutIgnored: the first push carries text,
// binary, odd names, an empty directory and an inside link as a link, and
// leaves out .git/, .gitignore'd paths and links that lead out.
func TestPush_SendsTreeAsLinksWithoutIgnored(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	o := opts(t, dir)
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if !rep.Full {
		t.Errorf("first push: Full = false")
	}
	if len(rep.Skipped) != 2 {
		t.Errorf("Skipped = %q; want the two links that lead out", rep.Skipped)
	}
	out := sh(t, env, `cd /workspace &&
		test "$(readlink link-in)" = hello.txt && echo link-ok
		test -d empty && echo empty-ok
		test -f "name with spaces.txt" && echo spaces-ok
		test -f "$(printf 'caf\351.txt')" && echo latin-ok
		test -x script.sh || echo script-not-x
		sha256sum bin.dat
		for p in .git build main.o link-abs link-up; do test -e $p -o -L $p && echo "present: $p"; done
		true`)
	for _, want := range []string{"link-ok", "empty-ok", "spaces-ok", "latin-ok", "script-not-x"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("sandbox check %s missing:\n%s", want, out)
		}
	}
	if strings.Contains(out, "present:") {
		t.Errorf("excluded paths were pushed:\n%s", out)
	}
	if sum := localSum(t, filepath.Join(dir, "bin.dat")); !strings.Contains(out, sum) {
		t.Errorf("bin.dat differs in the sandbox: %s vs local %s", out, sum)
	}
}

func localSum(t *testing.T, p string) string {
	t.Helper()
	out, err := exec.Command("sha256sum", p).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[0]
}

// TestDiff_PatchReproducesSandbox: the unified diff of the sandbox's
// edits, applied by patch -p1 to a pristine copy, gives the same tree
// as Apply does, and after Apply nothing is left to bring back.
func TestDiff_PatchReproducesSandbox(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	o := opts(t, dir)
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	pristine, gitRef := copyTree(t, dir), copyTree(t, dir)
	sh(t, env, `cd /workspace &&
		sed -i 's/^five$/FIVE/; s/^ten$/TEN/' hello.txt &&
		echo more >> "name with spaces.txt" &&
		echo accented > "$(printf 'caf\351.txt')" &&
		mkdir -p new/dir && printf 'fresh\nfile\n' > new/dir/added.txt &&
		rm deleteme.txt && chmod +x script.sh &&
		printf 'now with newline\n' > noeol.txt &&
		echo obj > other.o`)
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	kinds := map[string]workspace.Kind{}
	var patch strings.Builder
	for _, ch := range c.Changes {
		kinds[ch.Path] = ch.Kind
		patch.WriteString(ch.Diff())
	}
	want := map[string]workspace.Kind{
		"hello.txt": workspace.Modified, "name with spaces.txt": workspace.Modified, nonUTF8: workspace.Modified,
		"new/dir/added.txt": workspace.Added, "deleteme.txt": workspace.Deleted, "script.sh": workspace.Modified,
		"noeol.txt": workspace.Modified,
	}
	if len(kinds) != len(want) {
		t.Errorf("changes = %v; want %v", kinds, want)
	}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("change %q = %q; want %q", p, kinds[p], k)
		}
	}
	cmd := exec.Command("patch", "-p1", "--batch", "--no-backup-if-mismatch")
	cmd.Dir, cmd.Stdin = pristine, strings.NewReader(patch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch -p1: %v\n%s\npatch was:\n%s", err, out, patch.String())
	}
	cmd = exec.Command("git", "apply", "-p1", "-")
	cmd.Dir, cmd.Stdin = gitRef, strings.NewReader(patch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	rep, err := c.Apply(t.Context(), workspace.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	t.Logf("diff:\n%s", patch.String())
	if len(rep.Written) != 6 || len(rep.Deleted) != 1 {
		t.Errorf("Apply wrote %q, deleted %q", rep.Written, rep.Deleted)
	}
	for _, p := range []string{"hello.txt", "name with spaces.txt", nonUTF8, "new/dir/added.txt", "script.sh", "noeol.txt"} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		must(t, err)
		patched, err := os.ReadFile(filepath.Join(pristine, p))
		must(t, err)
		if !bytes.Equal(got, patched) {
			t.Errorf("%q: applied %q, patched %q", p, got, patched)
		}
		byGit, err := os.ReadFile(filepath.Join(gitRef, p))
		must(t, err)
		if !bytes.Equal(got, byGit) {
			t.Errorf("%q: applied %q, git apply %q", p, got, byGit)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "script.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("script.sh not executable after apply: %v %v", fi.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "deleteme.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleteme.txt still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "other.o")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a .gitignore'd file was brought back: %v", err)
	}
	again, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare after Apply: %v", err)
	}
	if len(again.Changes) != 0 {
		t.Errorf("after Apply, changes remain: %v", again.Changes)
	}
}

// TestApply_ConflictRefused: a file changed on both sides is a conflict;
// Apply refuses it and writes nothing, unless told to take theirs. A
// change made only locally is not a change to bring back.
func TestApply_ConflictRefused(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	o := opts(t, dir)
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	sh(t, env, `cd /workspace && echo sandbox > hello.txt && echo sandbox > sub/inner.txt`)
	must(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("mine\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.sh"), []byte("local only\n"), 0o644))
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	got := map[string]workspace.Kind{}
	for _, ch := range c.Changes {
		got[ch.Path] = ch.Kind
	}
	if len(got) != 2 || got["hello.txt"] != workspace.Conflict || got["sub/inner.txt"] != workspace.Modified {
		t.Fatalf("changes = %v; want hello.txt conflict, sub/inner.txt modified", got)
	}
	if _, err := c.Apply(t.Context(), workspace.ApplyOptions{}); !errors.Is(err, workspace.ErrConflict) {
		t.Fatalf("Apply with a conflict = %v; want ErrConflict", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/inner.txt")); string(b) != "inner\n" {
		t.Errorf("a refused apply wrote sub/inner.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "mine\n" {
		t.Errorf("local edit lost: %q", b)
	}
	if _, err := c.Apply(t.Context(), workspace.ApplyOptions{Paths: []string{"sub"}}); err != nil {
		t.Fatalf("Apply(sub): %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/inner.txt")); string(b) != "sandbox\n" {
		t.Errorf("sub/inner.txt = %q after Apply(sub)", b)
	}
	if _, err := c.Apply(t.Context(), workspace.ApplyOptions{Paths: []string{"hello.txt"}, Theirs: true}); err != nil {
		t.Fatalf("Apply --theirs: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "sandbox\n" {
		t.Errorf("hello.txt = %q after --theirs", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "script.sh")); string(b) != "local only\n" {
		t.Errorf("local-only change touched: %q", b)
	}
}

// TestApply_NeverEscapes: what a sandbox does outside its directory never
// shows up; links out of the tree, writes through a local link that leads
// out, and protected paths are refused or skipped, and nothing is written
// outside the local directory.
func TestApply_NeverEscapes(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	top := filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	outside := filepath.Join(top, "outside")
	must(t, os.Mkdir(outside, 0o755))
	must(t, os.Symlink(outside, filepath.Join(dir, "out"))) // local, absolute: never pushed
	o := opts(t, dir)
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	sh(t, env, `cd /workspace &&
		mkdir -p ../../etc && echo x > ../../etc/x &&
		ln -s /etc evil && ln -s ../../etc evil2 &&
		mkdir out && echo pwned > out/evil.txt &&
		echo SECRET=2 > .env && mkdir -p .git && echo hook > .git/hooks-x &&
		rm -rf sub && ln -s /etc sub`)
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	for _, ch := range c.Changes {
		if strings.Contains(ch.Path, "..") || strings.HasPrefix(ch.Path, ".git/") || ch.Path == "etc/x" {
			t.Errorf("unexpected change %q", ch.Path)
		}
	}
	_, err = c.Apply(t.Context(), workspace.ApplyOptions{Theirs: true})
	if !errors.Is(err, workspace.ErrUnsafePath) {
		t.Fatalf("Apply = %v; want ErrUnsafePath", err)
	}
	for _, p := range []string{"evil", "evil2"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written by a refused apply", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "inner.txt")); err != nil || string(b) != "inner\n" {
		t.Errorf("sub/inner.txt after a refused apply: %q, %v", b, err)
	}
	for _, ch := range c.Changes {
		if strings.HasPrefix(ch.Path, "sub/") && ch.Kind != workspace.Deleted {
			t.Errorf("the sandbox's sub -> /etc was followed: change %q %s", ch.Path, ch.Kind)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("apply wrote through a local link out of the tree")
	}
	for _, p := range []string{filepath.Join(top, "etc"), filepath.Join(top, "a", "etc")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("something appeared outside the tree: %s", p)
		}
	}
	rep, err := c.Apply(t.Context(), workspace.ApplyOptions{Paths: []string{".env"}})
	if err != nil {
		t.Fatalf("Apply(.env): %v", err)
	}
	if len(rep.Written) != 0 || len(rep.Skipped) != 1 {
		t.Errorf("Apply(.env) = %+v; want it skipped as protected", rep)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".env")); string(b) != "SECRET=1\n" {
		t.Errorf(".env overwritten: %q", b)
	}
}

// failingTree is the real sandbox whose tree uploads break after a few
// bytes, as a dropped connection would.
type failingTree struct{ *docker.Env }

func (f failingTree) PutTree(ctx context.Context, dir string, r io.Reader) error {
	return f.Env.PutTree(ctx, dir, io.MultiReader(io.LimitReader(r, 700), errReader{}))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection dropped") }

// TestPush_FailedTransferKeepsManifest: a push that breaks midway leaves
// the manifest of the last good push; the next push is incremental and
// carries what changed, including deletions.
func TestPush_FailedTransferKeepsManifest(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	o := opts(t, dir)
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	before := manifestBytes(t, o)
	must(t, os.WriteFile(filepath.Join(dir, "hello.txt"), bytes.Repeat([]byte("changed\n"), 500), 0o644))
	must(t, os.Remove(filepath.Join(dir, "deleteme.txt")))
	if _, err := workspace.Push(t.Context(), failingTree{env}, o); err == nil {
		t.Fatalf("Push through a broken transfer succeeded")
	}
	if after := manifestBytes(t, o); !bytes.Equal(before, after) {
		t.Errorf("manifest changed by a failed push")
	}
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if rep.Full || strings.Join(rep.Sent, ",") != "hello.txt" || strings.Join(rep.Deleted, ",") != "deleteme.txt" {
		t.Errorf("incremental push = %+v; want hello.txt sent, deleteme.txt deleted", rep)
	}
	out := sh(t, env, `cd /workspace && test ! -e deleteme.txt && echo gone; sha256sum hello.txt`)
	if !strings.Contains(out, "gone") || !strings.Contains(out, localSum(t, filepath.Join(dir, "hello.txt"))) {
		t.Errorf("sandbox after incremental push:\n%s", out)
	}
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if len(c.Changes) != 0 {
		t.Errorf("changes right after a push: %v", c.Changes)
	}
}

func manifestBytes(t *testing.T, o workspace.Options) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(o.StateDir, "sync", o.Task+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPush_SizeLimit: a local tree above the limit is refused before
// anything reaches the sandbox, and a sandbox tree grown above it is
// refused by the comparison, so nothing is applied from it.
func TestPush_SizeLimit(t *testing.T) {
	env := sandbox(t)
	dir := makeTree(t)
	o := opts(t, dir)
	o.MaxBytes = 100
	if _, err := workspace.Push(t.Context(), env, o); !errors.Is(err, workspace.ErrTooLarge) {
		t.Fatalf("Push above the limit = %v; want ErrTooLarge", err)
	}
	if out := sh(t, env, `test -e /workspace && echo there; true`); out != "" {
		t.Errorf("a refused push reached the sandbox: %q", out)
	}
	o.MaxBytes = 4096
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	sh(t, env, `head -c 8192 /dev/zero > /workspace/big.bin`)
	if _, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task); !errors.Is(err, workspace.ErrTooLarge) {
		t.Errorf("Compare of a sandbox above the limit = %v; want ErrTooLarge", err)
	}
}
