package gitguard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/internal/gitguard"
)

// gitEnv isolates git from the machine's configuration: the tests'
// repositories are the only configuration git reads.
func gitEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}
}

// git runs git in dir and returns its combined output; ok says it exited 0.
func git(t *testing.T, home, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(home)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func mustGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	out, ok := git(t, home, dir, args...)
	if !ok {
		t.Fatalf("git %s in %s: %s", strings.Join(args, " "), dir, out)
	}
	return out
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// fixture is a workspace holding a repository with one commit, a tracked
// directory src and a submodule-ready origin beside it, and a marker path
// that the attacks' programs create.
type fixture struct {
	home, ws, outside, marker string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), marker: filepath.Join(base, "RAN")}
	for _, d := range []string{f.home, f.ws, f.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, f.home, f.ws, "init", "-q", "-b", "main")
	write(t, filepath.Join(f.ws, "a.txt"), "a\n", 0o644)
	write(t, filepath.Join(f.ws, "src", "b.txt"), "b\n", 0o644)
	mustGit(t, f.home, f.ws, "add", ".")
	mustGit(t, f.home, f.ws, "commit", "-qm", "one")
	return f
}

// run is the program an attack plants: it leaves the marker.
func (f fixture) run() string { return "touch " + f.marker }

func (f fixture) ran() bool {
	_, err := os.Stat(f.marker)
	return err == nil
}

// attack plants something through plain file writes and git (as a
// confined command could) and returns the user's later git command that
// runs it, in the directory it runs in.
type attack struct {
	name    string
	before  func(t *testing.T, f fixture) // the user's own setup, before the command
	plant   func(t *testing.T, f fixture)
	trigger func(f fixture) (dir string, args []string)
}

func status(f fixture) (string, []string) { return f.ws, []string{"status"} }

func attacks() []attack {
	return []attack{
		{name: "fsmonitor in the repository's config", plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "core.fsmonitor", f.run())
		}, trigger: status},
		{name: "a pre-commit hook", plant: func(t *testing.T, f fixture) {
			write(t, filepath.Join(f.ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\n"+f.run()+"\n", 0o755)
		}, trigger: func(f fixture) (string, []string) {
			return f.ws, []string{"commit", "-q", "--allow-empty", "-m", "x"}
		}},
		{name: "commondir to a copied git directory with fsmonitor", plant: func(t *testing.T, f fixture) {
			evil := filepath.Join(f.ws, "evil")
			if out, err := exec.Command("cp", "-a", filepath.Join(f.ws, ".git"), evil).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			mustGit(t, f.home, f.ws, "config", "--file", filepath.Join(evil, "config"), "core.fsmonitor", f.run())
			write(t, filepath.Join(f.ws, ".git", "commondir"), "../evil\n", 0o644)
		}, trigger: status},
		{name: "commondir to a directory outside the workspace", plant: func(t *testing.T, f fixture) {
			evil := filepath.Join(f.outside, "evil")
			if out, err := exec.Command("cp", "-a", filepath.Join(f.ws, ".git"), evil).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			mustGit(t, f.home, f.ws, "config", "--file", filepath.Join(evil, "config"), "core.fsmonitor", f.run())
			write(t, filepath.Join(f.ws, ".git", "commondir"), evil+"\n", 0o644)
		}, trigger: status},
		{name: "embedded repository added as a gitlink", plant: func(t *testing.T, f fixture) {
			sub := filepath.Join(f.ws, "sub")
			mustGit(t, f.home, f.ws, "init", "-q", "sub")
			write(t, filepath.Join(sub, "x"), "x\n", 0o644)
			mustGit(t, f.home, sub, "add", ".")
			mustGit(t, f.home, sub, "commit", "-qm", "x")
			mustGit(t, f.home, sub, "config", "core.fsmonitor", f.run())
			write(t, filepath.Join(sub, "x"), "changed\n", 0o644)
			mustGit(t, f.home, f.ws, "add", "sub")
		}, trigger: status},
		{name: "a repository planted over a tracked directory", plant: func(t *testing.T, f fixture) {
			src := filepath.Join(f.ws, "src")
			mustGit(t, f.home, src, "init", "-q")
			mustGit(t, f.home, src, "config", "core.fsmonitor", f.run())
		}, trigger: func(f fixture) (string, []string) { return filepath.Join(f.ws, "src"), []string{"status"} }},
		{name: "a .git file pointing outside the workspace", plant: func(t *testing.T, f fixture) {
			evil := filepath.Join(f.outside, "evil.git")
			mustGit(t, f.home, f.outside, "init", "-q", "--bare", evil)
			mustGit(t, f.home, f.outside, "config", "--file", filepath.Join(evil, "config"), "core.bare", "false")
			mustGit(t, f.home, f.outside, "config", "--file", filepath.Join(evil, "config"), "core.fsmonitor", f.run())
			write(t, filepath.Join(f.ws, "src", ".git"), "gitdir: "+evil+"\n", 0o644)
		}, trigger: func(f fixture) (string, []string) { return filepath.Join(f.ws, "src"), []string{"status"} }},
		{name: "a .git link in a subdirectory", plant: func(t *testing.T, f fixture) {
			evil := filepath.Join(f.outside, "evil")
			mustGit(t, f.home, f.outside, "init", "-q", evil)
			mustGit(t, f.home, evil, "config", "core.fsmonitor", f.run())
			if err := os.Symlink(filepath.Join(evil, ".git"), filepath.Join(f.ws, "src", ".git")); err != nil {
				t.Fatal(err)
			}
		}, trigger: func(f fixture) (string, []string) { return filepath.Join(f.ws, "src"), []string{"status"} }},
		{name: "diff.external", plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "diff.external", writeScript(t, f))
			write(t, filepath.Join(f.ws, "a.txt"), "changed\n", 0o644)
		}, trigger: func(f fixture) (string, []string) { return f.ws, []string{"diff"} }},
		{name: "a clean filter with .gitattributes", plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "filter.x.clean", f.run()+"; cat")
			write(t, filepath.Join(f.ws, ".gitattributes"), "*.txt filter=x\n", 0o644)
			write(t, filepath.Join(f.ws, "a.txt"), "changed\n", 0o644)
		}, trigger: func(f fixture) (string, []string) { return f.ws, []string{"add", "a.txt"} }},
		{name: "a shell alias", plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "alias.st", "!"+f.run())
		}, trigger: func(f fixture) (string, []string) { return f.ws, []string{"st"} }},
		{name: "include.path to a file with fsmonitor", plant: func(t *testing.T, f fixture) {
			write(t, filepath.Join(f.ws, "evil.inc"), "[core]\n\tfsmonitor = "+f.run()+"\n", 0o644)
			mustGit(t, f.home, f.ws, "config", "include.path", "../evil.inc")
		}, trigger: status},
		{name: "includeIf", plant: func(t *testing.T, f fixture) {
			write(t, filepath.Join(f.ws, "evil.inc"), "[core]\n\tfsmonitor = "+f.run()+"\n", 0o644)
			mustGit(t, f.home, f.ws, "config", "includeIf.gitdir:/.path", "../evil.inc")
		}, trigger: status},
		{name: "core.sshCommand", plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "core.sshCommand", writeScript(t, f))
		}, trigger: func(f fixture) (string, []string) {
			return f.ws, []string{"fetch", "ssh://git@host.invalid/r.git"}
		}},
		{name: "core.hooksPath into the workspace", plant: func(t *testing.T, f fixture) {
			write(t, filepath.Join(f.ws, "hooks2", "pre-commit"), "#!/bin/sh\n"+f.run()+"\n", 0o755)
			mustGit(t, f.home, f.ws, "config", "core.hooksPath", "hooks2")
		}, trigger: func(f fixture) (string, []string) {
			return f.ws, []string{"commit", "-q", "--allow-empty", "-m", "x"}
		}},
		{name: "a hook in the user's own core.hooksPath (husky)", before: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "core.hooksPath", ".husky")
			if err := os.MkdirAll(filepath.Join(f.ws, ".husky"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, plant: func(t *testing.T, f fixture) {
			write(t, filepath.Join(f.ws, ".husky", "pre-commit"), "#!/bin/sh\n"+f.run()+"\n", 0o755)
		}, trigger: func(f fixture) (string, []string) {
			return f.ws, []string{"commit", "-q", "--allow-empty", "-m", "x"}
		}},
		{name: "fsmonitor in a submodule's git directory", before: func(t *testing.T, f fixture) {
			origin := filepath.Join(f.outside, "origin")
			mustGit(t, f.home, f.outside, "init", "-q", origin)
			write(t, filepath.Join(origin, "o"), "o\n", 0o644)
			mustGit(t, f.home, origin, "add", ".")
			mustGit(t, f.home, origin, "commit", "-qm", "o")
			mustGit(t, f.home, f.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", origin, "mod")
			mustGit(t, f.home, f.ws, "commit", "-qm", "mod")
		}, plant: func(t *testing.T, f fixture) {
			mustGit(t, f.home, f.ws, "config", "--file", filepath.Join(f.ws, ".git", "modules", "mod", "config"), "core.fsmonitor", f.run())
			write(t, filepath.Join(f.ws, "mod", "o"), "changed\n", 0o644)
		}, trigger: status},
	}
}

// writeScript writes an executable that leaves the marker and fails (as
// an ssh that cannot connect does), and returns its path.
func writeScript(t *testing.T, f fixture) string {
	p := filepath.Join(f.ws, "tools", "x.sh")
	write(t, p, "#!/bin/sh\n"+f.run()+"\nexit 1\n", 0o755)
	return p
}

// watchedTree is a session's Tree that has seen ws once (nothing in it
// counting as changed), and so watches it.
func watchedTree(t *testing.T, ws string) *gitguard.Tree {
	t.Helper()
	tree := new(gitguard.Tree)
	t.Cleanup(tree.Close)
	if _, err := gitguard.Check(context.Background(), ws, gitguard.Options{Since: time.Now().Add(time.Hour), Tree: tree}); err != nil {
		t.Fatalf("first Check: %v", err)
	}
	return tree
}

// settle waits until a change made now has a ctime after the setup's:
// Check counts a change from a second before the command started.
func settle() time.Time {
	time.Sleep(1100 * time.Millisecond)
	return time.Now()
}

// TestCheck_AttacksMadeInert: each attack runs its program through the
// user's git without Check (the control), and not after it, whether
// Check walks afresh or with a session's Tree that watched the workspace
// from before the attack; what Check moved aside is reported and kept.
func TestCheck_AttacksMadeInert(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []string{"control", "fresh", "watched"} {
				guarded := mode != "control"
				f := newFixture(t)
				if a.before != nil {
					a.before(t, f)
				}
				var tree *gitguard.Tree
				if mode == "watched" {
					tree = watchedTree(t, f.ws)
				}
				since := settle()
				a.plant(t, f)
				var rep gitguard.Report
				if guarded {
					var err error
					rep, err = gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: tree})
					if err != nil {
						t.Fatalf("Check: %v", err)
					}
					if len(rep.Findings) == 0 {
						t.Errorf("Check found nothing")
					}
					for _, fd := range rep.Findings {
						if _, err := os.Stat(fd.Kept); err != nil {
							t.Errorf("finding %+v: what was moved aside is not kept: %v", fd, err)
						}
					}
				}
				dir, args := a.trigger(f)
				git(t, f.home, dir, args...)
				if !guarded && !f.ran() {
					t.Fatalf("control: git %s ran nothing: the attack is not real", strings.Join(args, " "))
				}
				if guarded && f.ran() {
					t.Errorf("git %s ran the planted program after Check (findings %+v)", strings.Join(args, " "), rep.Findings)
				}
			}
		})
	}
}

// TestCheck_OrdinaryWorkUntouched: what a command does with git in the
// ordinary way (a new repository, a clone, a submodule, commits, user
// settings, changed hook samples) is neither reported nor changed.
func TestCheck_OrdinaryWorkUntouched(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	origin := filepath.Join(f.outside, "origin")
	mustGit(t, f.home, f.outside, "init", "-q", origin)
	write(t, filepath.Join(origin, "o"), "o\n", 0o644)
	mustGit(t, f.home, origin, "add", ".")
	mustGit(t, f.home, origin, "commit", "-qm", "o")
	since := settle()

	mustGit(t, f.home, f.ws, "config", "user.email", "agent@example.invalid")
	mustGit(t, f.home, f.ws, "config", "pull.rebase", "true")
	write(t, filepath.Join(f.ws, "a.txt"), "changed\n", 0o644)
	mustGit(t, f.home, f.ws, "commit", "-qam", "two")
	mustGit(t, f.home, f.ws, "checkout", "-qb", "topic")
	mustGit(t, f.home, f.ws, "init", "-q", "newrepo")
	mustGit(t, f.home, f.ws, "clone", "-q", origin, "vendor/origin")
	mustGit(t, f.home, f.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", origin, "mod")
	mustGit(t, f.home, f.ws, "commit", "-qm", "mod")
	mustGit(t, f.home, f.ws, "worktree", "add", "-q", "wt", "main")

	rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since})
	if err != nil || len(rep.Findings) != 0 || rep.Incomplete != "" {
		t.Fatalf("Check = %+v, %v; want nothing found", rep, err)
	}
	if got := mustGit(t, f.home, f.ws, "config", "user.email"); got != "agent@example.invalid\n" {
		t.Errorf("user.email after Check: %q", got)
	}
	mustGit(t, f.home, filepath.Join(f.ws, "vendor", "origin"), "pull", "-q")
	mustGit(t, f.home, filepath.Join(f.ws, "wt"), "status")
}

// TestCheck_OldChangesLeftAlone: what was there before the command (the
// user's own fsmonitor, a hook, a commondir) is the user's: not touched.
func TestCheck_OldChangesLeftAlone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	mustGit(t, f.home, f.ws, "config", "core.fsmonitor", "true")
	write(t, filepath.Join(f.ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n", 0o755)
	since := settle()
	rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("Check = %+v, %v; want nothing", rep, err)
	}
	if got := mustGit(t, f.home, f.ws, "config", "core.fsmonitor"); got != "true\n" {
		t.Errorf("the user's core.fsmonitor: %q", got)
	}
}

// TestCheck_BoundedWalk: a tree larger than MaxDirs is said to be
// checked only in part.
func TestCheck_BoundedWalk(t *testing.T) {
	ws := t.TempDir()
	for i := range 20 {
		if err := os.MkdirAll(filepath.Join(ws, "d", strings.Repeat("x", i+1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := gitguard.Check(context.Background(), ws, gitguard.Options{Since: time.Now(), MaxDirs: 5})
	if err != nil || !strings.Contains(rep.Incomplete, "5 directories") {
		t.Fatalf("Check = %+v, %v; want it incomplete after 5 directories", rep, err)
	}
}

// TestCheck_TreeSeesChangesDeepInside: with a session's Tree, a second
// Check still finds a repository planted deep inside directories the
// first one saw (only their entries changed), and one planted in a
// directory made since; a Check after the planted ones were made inert
// finds nothing more.
func TestCheck_TreeSeesChangesDeepInside(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	deep := filepath.Join(f.ws, "src", "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	var tree gitguard.Tree
	defer tree.Close()
	since := settle()
	if rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree}); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("first Check = %+v, %v", rep, err)
	}
	since = settle()
	mustGit(t, f.home, deep, "init", "-q")
	mustGit(t, f.home, deep, "config", "core.fsmonitor", f.run())
	newer := filepath.Join(f.ws, "new", "x")
	mustGit(t, f.home, f.ws, "init", "-q", newer)
	mustGit(t, f.home, newer, "config", "alias.x", "!"+f.run())
	rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree})
	if err != nil || len(rep.Findings) != 2 {
		t.Fatalf("second Check = %+v, %v; want the two planted keys", rep, err)
	}
	since = settle()
	if rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree}); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("third Check = %+v, %v; want nothing", rep, err)
	}

	// A watched directory replaced by another of the same name, and a
	// watched one moved, each with a repository planted inside.
	since = settle()
	if err := os.RemoveAll(filepath.Join(f.ws, "src", "a")); err != nil {
		t.Fatal(err)
	}
	replaced := filepath.Join(f.ws, "src", "a", "b")
	mustGit(t, f.home, f.ws, "init", "-q", replaced)
	mustGit(t, f.home, replaced, "config", "core.pager", f.run())
	if err := os.Rename(filepath.Join(f.ws, "new"), filepath.Join(f.ws, "moved")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, f.home, filepath.Join(f.ws, "moved", "x"), "config", "core.sshCommand", f.run())
	rep, err = gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree})
	if err != nil || len(rep.Findings) != 2 {
		t.Fatalf("Check after the replacement and the move = %+v, %v; want the two planted keys", rep, err)
	}
}

// TestCheck_QuietTreeStillReadsRepositories: when nothing was made,
// removed or moved in any directory since the last Check, a Check with
// the session's Tree looks only at the repositories it knows; what a
// command wrote inside them in place (a key in a nested repository's
// configuration, a hook of the top one) is still found and made inert.
func TestCheck_QuietTreeStillReadsRepositories(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	nested := filepath.Join(f.ws, "src", "vendor", "lib")
	mustGit(t, f.home, f.ws, "init", "-q", nested)
	var tree gitguard.Tree
	defer tree.Close()
	for range 2 { // the first walks and watches, the second finds it settled
		if rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: settle(), Tree: &tree}); err != nil || len(rep.Findings) != 0 {
			t.Fatalf("settling Check = %+v, %v", rep, err)
		}
	}
	since := settle()
	cfg := filepath.Join(nested, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, cfg, string(b)+"[core]\n\tfsmonitor = "+f.run()+"\n", 0o644)
	write(t, filepath.Join(f.ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\n"+f.run()+"\n", 0o755)
	rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree})
	if err != nil || len(rep.Findings) != 2 {
		t.Fatalf("Check after writes inside the repositories = %+v, %v; want the key and the hook", rep, err)
	}
	mustGit(t, f.home, nested, "status")
	if f.ran() {
		t.Fatal("the planted program ran after Check")
	}
}

// TestCheck_FifosNeverWaitedOn: a command that leaves a fifo where git
// reads a file (a nested repository's config, a .git entry, a gitdir
// file's target) cannot make the check wait for a writer: Check returns,
// with a session's Tree and without, and the fifos where git would have
// read configuration or a pointer are moved aside.
func TestCheck_FifosNeverWaitedOn(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, withTree := range []bool{false, true} {
		t.Run(fmt.Sprintf("tree=%v", withTree), func(t *testing.T) {
			f := newFixture(t)
			var tree *gitguard.Tree
			if withTree {
				tree = &gitguard.Tree{}
				defer tree.Close()
				if _, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: time.Now().Add(time.Hour), Tree: tree}); err != nil {
					t.Fatal(err)
				}
			}
			nested := filepath.Join(f.ws, "sub")
			mustGit(t, f.home, f.ws, "init", "-q", nested)
			since := settle()
			fifo := func(p string) {
				os.Remove(p)
				if err := unix.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fifo(filepath.Join(nested, ".git", "config"))
			os.MkdirAll(filepath.Join(f.ws, "plain"), 0o755)
			fifo(filepath.Join(f.ws, "plain", ".git"))
			fifo(filepath.Join(f.ws, "target"))
			os.MkdirAll(filepath.Join(f.ws, "pointed"), 0o755)
			write(t, filepath.Join(f.ws, "pointed", ".git"), "gitdir: ../target\n", 0o644)

			done := make(chan gitguard.Report, 1)
			go func() {
				rep, _ := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: tree})
				done <- rep
			}()
			select {
			case rep := <-done:
				var rules []string
				for _, fd := range rep.Findings {
					rules = append(rules, filepath.Base(filepath.Dir(fd.Path))+"/"+filepath.Base(fd.Path)+" "+fd.Rule)
				}
				got := strings.Join(rules, "; ")
				for _, want := range []string{".git/config git-config not a regular file", "plain/.git git-redirect"} {
					if !strings.Contains(got, want) {
						t.Errorf("findings %q; want %q among them", got, want)
					}
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("Check waited on a fifo")
			}
		})
	}
}

// TestCheck_LinkedConfigNeverReadOrWritten: a command that makes a nested
// repository's config a link to a file outside the workspace (a
// credentials file in configuration syntax) gets the link moved aside,
// unread: no copy of the file lands in the workspace and the file is not
// rewritten. A config whose directory is a link out of the workspace is
// not followed either. The control: git itself, run on the link as the
// check used to, reads the secret.
func TestCheck_LinkedConfigNeverReadOrWritten(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	secretText := "[client]\n\tpassword = FAKE-SECRET-123\n[core]\n\tpager = x\n"
	secret := filepath.Join(f.outside, "my.cnf")
	write(t, secret, secretText, 0o600)
	dirOut := filepath.Join(f.outside, "gitdir")
	write(t, filepath.Join(dirOut, "config"), secretText, 0o600)
	nested := filepath.Join(f.ws, "s1")
	mustGit(t, f.home, f.ws, "init", "-q", nested)
	mustGit(t, f.home, f.ws, "init", "-q", filepath.Join(f.ws, "s2"))
	since := settle()
	cfg := filepath.Join(nested, ".git", "config")
	os.Remove(cfg)
	if err := os.Symlink(secret, cfg); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.ws, "s2", ".git"))
	if err := os.Symlink(dirOut, filepath.Join(f.ws, "s2", ".git")); err != nil {
		t.Fatal(err)
	}
	if out := mustGit(t, f.home, "/", "config", "--file", cfg, "client.password"); !strings.Contains(out, "FAKE-SECRET-123") {
		t.Fatalf("control: git did not read through the link: %q", out)
	}

	rep, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since})
	if err != nil {
		t.Logf("Check: %v", err)
	}
	found := false
	for _, fd := range rep.Findings {
		found = found || fd.Path == cfg && fd.Rule == "git-config link"
	}
	if !found {
		t.Errorf("findings %+v; want the linked config moved aside", rep.Findings)
	}
	filepath.Walk(f.ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "FAKE-SECRET-123") {
				t.Errorf("the secret was copied into the workspace: %s", p)
			}
		}
		return nil
	})
	for _, p := range []string{secret, filepath.Join(dirOut, "config")} {
		if b, _ := os.ReadFile(p); string(b) != secretText {
			t.Errorf("%s outside the workspace was rewritten: %q", p, b)
		}
	}
}

// TestCheck_CutShortLooksBackLater: a Check that stops at its bound
// leaves what it did not reach to the next Checks of the session's Tree,
// which look at what changed since the first cut-short one began: a key
// planted past the bound is found once the command's next command removed
// what made the walk long, though it is older than that command.
func TestCheck_CutShortLooksBackLater(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	var tree gitguard.Tree
	defer tree.Close()
	if _, err := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: time.Now().Add(time.Hour), Tree: &tree, MaxDirs: 20}); err != nil {
		t.Fatal(err)
	}
	since := settle()
	for i := range 30 {
		os.MkdirAll(filepath.Join(f.ws, "a", fmt.Sprintf("d%02d", i)), 0o755)
	}
	late := filepath.Join(f.ws, "z", "sub")
	mustGit(t, f.home, f.ws, "init", "-q", late)
	mustGit(t, f.home, late, "config", "core.fsmonitor", f.run())
	rep, _ := gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree, MaxDirs: 20})
	if rep.Incomplete == "" || len(rep.Findings) != 0 {
		t.Fatalf("first Check = %+v; want it cut short before the key", rep)
	}
	since = settle()
	os.RemoveAll(filepath.Join(f.ws, "a"))
	rep, _ = gitguard.Check(context.Background(), f.ws, gitguard.Options{Since: since, Tree: &tree, MaxDirs: 20})
	if rep.Incomplete != "" || len(rep.Findings) != 1 {
		t.Fatalf("Check after the long part went = %+v; want the planted key found", rep)
	}
	mustGit(t, f.home, late, "status")
	if f.ran() {
		t.Fatal("the planted program ran")
	}
}
