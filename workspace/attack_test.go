package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/workspace"
)

// The tests in this file perform the attacks of a hostile sandbox for
// real: the sandbox is the local backend (its directory is on this
// machine, so its "commands" are writes into that directory), the
// comparison and apply are the real ones, and what would run on the host
// is run with the real git.

// writeFiles writes files (slash-separated path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// link is a symbolic link at a slash-separated path.
type link struct{ at, to string }

// makeLinks makes links under dir, with their parent directories.
func makeLinks(t *testing.T, dir string, links []link) {
	t.Helper()
	for _, l := range links {
		p := filepath.Join(dir, filepath.FromSlash(l.at))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink(l.to, p))
	}
}

// localEnv is the local backend standing in for a sandbox.
func localEnv(t *testing.T) *local.Env {
	t.Helper()
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

// pushed makes a project of files, pushes it to a local sandbox and
// returns a function that compares the sandbox with it again.
func pushed(t *testing.T, files map[string]string) (dir, remote string, compare func() *workspace.Comparison) {
	t.Helper()
	return pushedWithLinks(t, files, nil)
}

// pushedWithLinks is pushed with links in the project too.
func pushedWithLinks(t *testing.T, files map[string]string, links []link) (dir, remote string, compare func() *workspace.Comparison) {
	t.Helper()
	env := localEnv(t)
	dir = filepath.Join(t.TempDir(), "proj")
	writeFiles(t, dir, files)
	makeLinks(t, dir, links)
	o := opts(t, dir)
	o.Remote = filepath.Join(t.TempDir(), "sandbox", "ws")
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	return dir, o.Remote, func() *workspace.Comparison {
		t.Helper()
		c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
		if err != nil {
			t.Fatalf("Compare: %v", err)
		}
		return c
	}
}

// plantGitPointer writes, under dir, a .git file that points git at a
// crafted git directory whose core.fsmonitor creates canary: the next
// git status there runs it.
func plantGitPointer(t *testing.T, dir, canary string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		".git":                  "gitdir: evilgit\n",
		"evilgit/HEAD":          "ref: refs/heads/main\n",
		"evilgit/config":        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch " + canary + "; false\"\n",
		"evilgit/objects/.keep": "",
		"evilgit/refs/.keep":    "",
	})
}

// gitStatus runs the real git status in dir, never looking above it.
func gitStatus(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	t.Logf("git status in %s: %v\n%s", dir, err, out)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestApply_GitPointerNeverRunsSandboxCode: a sandbox that writes a .git
// file pointing at a git directory it crafted (core.fsmonitor set to a
// command) gets the host to run that command at the next git status when
// the tree is copied naively (the control). Apply refuses the .git file
// and the crafted directory, says why, applies the rest, and git status
// on the host runs nothing.
func TestApply_GitPointerNeverRunsSandboxCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		integration.Skip(t, "no git")
	}
	dir, remote, compare := pushed(t, map[string]string{"a.txt": "a\n"})
	canaryDir := t.TempDir()
	canary := filepath.Join(canaryDir, "ran")
	plantGitPointer(t, remote, canary)
	must(t, os.WriteFile(filepath.Join(remote, "a.txt"), []byte("A\n"), 0o644))

	// Control: the sandbox's tree written as is makes git run its code.
	naive := copyTree(t, remote)
	gitStatus(t, naive)
	if !exists(canary) {
		t.Fatal("control: git status in the naive copy did not run core.fsmonitor; the attack is not reproduced")
	}
	must(t, os.Remove(canary))

	c := compare()
	refused := map[string]string{}
	for _, ch := range c.Changes {
		if ch.Refused != "" {
			refused[ch.Path] = ch.Refused
		}
	}
	for _, p := range []string{".git", "evilgit/HEAD", "evilgit/config"} {
		if refused[p] == "" {
			t.Errorf("change %s not marked refused (refused: %v)", p, refused)
		}
	}
	for _, r := range c.Reports() {
		if r.Path == ".git" && !strings.Contains(r.Refused, ".git") {
			t.Errorf("report of .git: refused = %q; want a reason naming .git", r.Refused)
		}
	}
	rep, err := c.Apply(t.Context(), workspace.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if strings.Join(rep.Written, ",") != "a.txt" {
		t.Errorf("Written = %q; want only a.txt", rep.Written)
	}
	if !strings.Contains(strings.Join(rep.Skipped, "\n"), ".git (refused: ") {
		t.Errorf("Skipped = %q; want .git refused with a reason", rep.Skipped)
	}
	for _, p := range []string{".git", "evilgit"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s written by apply", p)
		}
	}
	gitStatus(t, dir)
	if exists(canary) {
		t.Fatal("git status on the host ran the sandbox's core.fsmonitor after apply")
	}
	// Asking for the paths by name does not get them written either.
	rep, err = compare().Apply(t.Context(), workspace.ApplyOptions{Paths: []string{".git", "evilgit"}})
	if err != nil || len(rep.Written) != 0 {
		t.Errorf("Apply(.git, evilgit) = %+v, %v; want nothing written", rep, err)
	}
}

// TestApply_RefusesWhatGitOrAShellRuns: .git in every spelling and at any
// depth, git's redirecting files, hook managers' files and shell start-up
// files coming from the sandbox are shown with a reason and never
// written; the ordinary file beside them is.
func TestApply_RefusesWhatGitOrAShellRuns(t *testing.T) {
	dir, remote, compare := pushed(t, map[string]string{"keep.txt": "k\n"})
	bad := []string{
		"sub/.git", ".GIT/config", "deep/er/.Git/hooks/pre-commit", ".git./x", "git~1/config",
		"vendor/x/.git", ".gitmodules", "lib/.gitattributes", ".husky/pre-commit",
		".githooks/pre-push", ".pre-commit-config.yaml", "lefthook.yml", ".envrc", "sub/.bashrc", ".profile", ".zshenv",
		"bare/HEAD", "bare/config", "bare/refs/heads/main",
	}
	files := map[string]string{"ok.txt": "fine\n", "bare/objects/.keep": ""}
	for _, p := range bad {
		files[p] = "x\n"
	}
	writeFiles(t, remote, files)
	c := compare()
	got := map[string]string{}
	for _, ch := range c.Changes {
		got[ch.Path] = ch.Refused
	}
	for _, p := range bad {
		if got[p] == "" {
			t.Errorf("%s: not refused (changes: %v)", p, got)
		}
	}
	if got["ok.txt"] != "" {
		t.Errorf("ok.txt refused: %s", got["ok.txt"])
	}
	rep, err := c.Apply(t.Context(), workspace.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(rep.Written) != 1 || rep.Written[0] != "ok.txt" {
		t.Errorf("Written = %q; want ok.txt only", rep.Written)
	}
	for _, p := range bad {
		if exists(filepath.Join(dir, filepath.FromSlash(p))) {
			t.Errorf("%s written", p)
		}
	}
	for _, p := range []string{".GIT", ".git.", "git~1", "deep", "bare", ".husky"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("directory %s made", p)
		}
	}
}

// TestApply_LinksJudgedWhereTheyResolve: links that pass a check on
// their text but resolve out of the directory, or into .git, through
// other links (of the same change set or already here) are refused, and
// a refused apply writes nothing. The control shows that the chain does
// lead out once written.
func TestApply_LinksJudgedWhereTheyResolve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		local  []link // already in the project (and pushed)
		remote []link // made by the sandbox
		escape bool   // the links lead out once written
	}{
		{name: "chain in one change set", remote: []link{{"sub/lnk", ".."}, {"sub/esc", "lnk/.."}}, escape: true},
		{name: "chain through a local link", local: []link{{"sub/up", ".."}}, remote: []link{{"sub/esc", "up/.."}}, escape: true},
		{name: "new link makes a local one escape", local: []link{{"sub/esc", "lnk/.."}}, remote: []link{{"sub/lnk", ".."}}, escape: true},
		{name: "long chain", remote: []link{{"a/b/l1", ".."}, {"a/b/l2", "l1/.."}, {"a/b/l3", "l2/.."}}, escape: true},
		{name: "into .git", remote: []link{{"hook", ".git/hooks/pre-commit"}}},
		{name: "into .git through a link", remote: []link{{"g", ".git"}, {"sub/h", "../g/hooks"}}},
		{name: "loop", remote: []link{{"x", "y"}, {"y", "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"sub/inner.txt": "inner\n", "a/b/c.txt": "c\n"}
			dir, remote, compare := pushedWithLinks(t, files, tc.local)
			must(t, os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.txt"), []byte("outside\n"), 0o644))
			makeLinks(t, remote, tc.remote)
			if tc.escape {
				// Control: in the sandbox's tree as written, the last link
				// really reaches the directory above.
				naive := copyTree(t, remote)
				last := tc.remote[len(tc.remote)-1]
				if tc.name == "new link makes a local one escape" {
					last = tc.local[0]
				}
				must(t, os.WriteFile(filepath.Join(filepath.Dir(naive), "above.txt"), nil, 0o644))
				if !exists(filepath.Join(naive, filepath.FromSlash(last.at), "above.txt")) {
					t.Fatalf("control: %s does not lead out of the tree", last.at)
				}
			}
			c := compare()
			_, err := c.Apply(t.Context(), workspace.ApplyOptions{Theirs: true})
			if !errors.Is(err, workspace.ErrUnsafePath) {
				t.Fatalf("Apply = %v; want ErrUnsafePath", err)
			}
			for _, l := range tc.remote {
				if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(l.at))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
					if !hasLocal(tc.local, l.at) {
						t.Errorf("%s written by a refused apply", l.at)
					}
				}
			}
		})
	}
}

func hasLocal(ls []link, at string) bool {
	for _, l := range ls {
		if l.at == at {
			return true
		}
	}
	return false
}

// TestApply_ModesLoseSetIDAndWorldWrite: a file the sandbox made set-id,
// sticky or writable by anyone arrives with its other permission bits
// only.
func TestApply_ModesLoseSetIDAndWorldWrite(t *testing.T) {
	dir, remote, compare := pushed(t, map[string]string{"keep.txt": "k\n"})
	cases := []struct {
		name string
		mode fs.FileMode
		want fs.FileMode
	}{
		{"setuid.sh", 0o777 | fs.ModeSetuid, 0o775},
		{"setgid.sh", 0o775 | fs.ModeSetgid, 0o775},
		{"sticky", 0o777 | fs.ModeSticky, 0o775},
		{"world.txt", 0o666, 0o664},
		{"plain.sh", 0o755, 0o755},
		{"private.txt", 0o640, 0o640},
	}
	for _, tc := range cases {
		p := filepath.Join(remote, tc.name)
		must(t, os.WriteFile(p, []byte(tc.name), 0o600))
		must(t, os.Chmod(p, tc.mode))
		if fi, err := os.Stat(p); err != nil || fi.Mode() != tc.mode {
			t.Fatalf("setup: %s has mode %v, %v; want %v", tc.name, fi.Mode(), err, tc.mode)
		}
	}
	if _, err := compare().Apply(t.Context(), workspace.ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, tc := range cases {
		fi, err := os.Lstat(filepath.Join(dir, tc.name))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := fi.Mode(); got != tc.want {
			t.Errorf("%s (%v in the sandbox) arrived %v; want %v", tc.name, tc.mode, got, tc.want)
		}
	}
}

// TestPush_KeepsModificationTimes: files arrive in the sandbox with their
// local modification time, on the first push and on an incremental one,
// through the tar run in the sandbox (local) and through the engine's
// archive call (docker); so make in the sandbox sees a later edit as
// newer than what it built.
func TestPush_KeepsModificationTimes(t *testing.T) {
	for _, backend := range []string{"local", "docker"} {
		t.Run(backend, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "proj")
			writeFiles(t, dir, map[string]string{"src.c": "one\n", "sub/old.txt": "old\n"})
			first := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
			must(t, os.Chtimes(filepath.Join(dir, "src.c"), first, first))
			must(t, os.Chtimes(filepath.Join(dir, "sub", "old.txt"), first, first))
			o := opts(t, dir)
			var env envs.Environment
			var mtime func(name string) time.Time
			switch backend {
			case "local":
				le := localEnv(t)
				o.Remote = filepath.Join(t.TempDir(), "ws")
				env = le
				mtime = func(name string) time.Time {
					fi, err := os.Stat(filepath.Join(o.Remote, name))
					must(t, err)
					return fi.ModTime()
				}
			case "docker":
				de := sandbox(t)
				env = de
				mtime = func(name string) time.Time {
					// seconds and nanoseconds since the epoch
					out := strings.Fields(sh(t, de, "stat -c '%Y %.9Y' /workspace/"+name))
					if len(out) != 2 {
						t.Fatalf("stat: %q", out)
					}
					sec, err1 := strconv.ParseInt(out[0], 10, 64)
					_, frac, _ := strings.Cut(out[1], ".")
					ns, err2 := strconv.ParseInt(frac, 10, 64)
					if err1 != nil || err2 != nil || len(frac) != 9 {
						t.Fatalf("stat: %q", out)
					}
					return time.Unix(sec, ns)
				}
			}
			push := func() {
				t.Helper()
				if _, err := workspace.Push(t.Context(), env, o); err != nil {
					t.Fatalf("Push: %v", err)
				}
			}
			push()
			for _, name := range []string{"src.c", "sub/old.txt"} {
				if got := mtime(name); !got.Equal(first) {
					t.Errorf("first push: %s has mtime %v in the sandbox; want %v", name, got, first)
				}
			}
			later := time.Date(2022, 5, 6, 7, 8, 9, 987654321, time.UTC)
			must(t, os.WriteFile(filepath.Join(dir, "src.c"), []byte("two\n"), 0o644))
			must(t, os.Chtimes(filepath.Join(dir, "src.c"), later, later))
			push()
			if got := mtime("src.c"); !got.Equal(later) {
				t.Errorf("incremental push: src.c has mtime %v in the sandbox; want %v", got, later)
			}
		})
	}
}

// TestApply_RefusesTheConfiguredHooksDirectory: in a project whose git
// configuration sets core.hooksPath to a directory of the project, a hook
// the sandbox writes there runs at the next git commit when copied
// naively (the control); apply refuses it with the reason and the commit
// runs nothing.
func TestApply_RefusesTheConfiguredHooksDirectory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		integration.Skip(t, "no git")
	}
	dir, remote, compare := pushed(t, map[string]string{"a.txt": "a\n", "tools/hooks/README": "hooks\n"})
	git := func(d string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		cmd.Dir = d
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(d))
		out, err := cmd.CombinedOutput()
		t.Logf("git %v in %s: %v\n%s", args, d, err, out)
	}
	git(dir, "init", "-q")
	git(dir, "config", "core.hooksPath", "tools/hooks")
	canary := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(remote, "tools", "hooks", "pre-commit")
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+canary+"\n"), 0o755))

	// Control: the hook copied in as it is runs at the next commit.
	naive := copyTree(t, dir)
	must(t, os.WriteFile(filepath.Join(naive, "tools", "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch "+canary+"\n"), 0o755))
	git(naive, "commit", "-q", "--allow-empty", "-m", "control")
	if !exists(canary) {
		t.Fatal("control: git commit did not run the hook in core.hooksPath; the attack is not reproduced")
	}
	must(t, os.Remove(canary))

	rep, err := compare().Apply(t.Context(), workspace.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(rep.Written) != 0 || !strings.Contains(strings.Join(rep.Skipped, "\n"), "tools/hooks/pre-commit (refused: ") {
		t.Errorf("Apply = %+v; want tools/hooks/pre-commit refused", rep)
	}
	git(dir, "commit", "-q", "--allow-empty", "-m", "after apply")
	if exists(canary) {
		t.Fatal("git commit here ran a hook the sandbox wrote")
	}
}
