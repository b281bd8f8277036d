package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostGit runs the user's own git in dir, as u, outside any sandbox:
// what a person does after the agent's command.
func hostGit(t *testing.T, u user, home, dir string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.invalid", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.invalid"}
	if u.switched {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestSandbox_GitLeftoversNeverRun: a command, with the gate out of the
// way (--yolo, the payload in a script), plants what the user's git
// would run later: an embedded repository with core.fsmonitor added as a
// gitlink, a pre-commit hook, a shell alias. Then the user runs git
// status, commit and the alias on the host. Under --sandbox off (the
// control) the planted programs run; under the default profile, through
// runbox run and as a background job, none does, and the command's
// result (a warning on stderr; the job's decided violations) says what
// was made inert. As root and as an unprivileged user.
func TestSandbox_GitLeftoversNeverRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, _, outside := sandboxDirs(t, u)
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			t.Cleanup(func() { stopDaemon(state) })
			for _, door := range []string{"run", "start"} {
				for _, profile := range []string{"off", "workspace"} {
					name := door + "-" + profile
					ws := mkdirOwned(t, u, filepath.Join(filepath.Dir(home), "ws-"+name))
					marker := filepath.Join(outside, "RAN-"+name)
					gitRepo(t, u, home, ws)
					writeOwned(t, u, filepath.Join(ws, "plant.sh"), plantGit(marker), 0o755)
					ran := doorRun(t, u, env, door, profile, ws)
					hostGit(t, u, home, ws, "status")
					hostGit(t, u, home, ws, "commit", "-q", "--allow-empty", "-m", "after")
					hostGit(t, u, home, ws, "st")
					_, err := os.Stat(marker)
					if planted := err == nil; planted != (profile == "off") {
						t.Errorf("%s: a planted program ran in the user's git: %v; want %v (command said %q)", name, planted, profile == "off", ran)
					}
					if profile == "workspace" && !strings.Contains(ran, "core.fsmonitor") {
						t.Errorf("%s: the result does not say what was made inert: %q", name, ran)
					}
				}
			}
		})
	}
}

// gitRepo makes ws a repository with one commit, as u.
func gitRepo(t *testing.T, u user, home, ws string) {
	t.Helper()
	writeOwned(t, u, filepath.Join(ws, "a.txt"), "a\n", 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"commit", "-qm", "one"}} {
		if out, ok := hostGit(t, u, home, ws, args...); !ok {
			t.Fatalf("git %v: %s", args, out)
		}
	}
}

// plantGit is the attack: each part may fail where the sandbox holds
// it (as root, .git/config and hooks are read-only); the script goes on.
func plantGit(marker string) string {
	run := "touch " + marker
	return `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid
git init -q sub && (cd sub && echo x > x && git add x && git commit -qm x && git config core.fsmonitor '` + run + `' && echo y > x)
git add sub
printf '#!/bin/sh\n` + run + `\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
git config alias.st '!` + run + `'
echo planted
`
}

// doorRun runs plant.sh in ws through door (run, or start then wait)
// under profile, and returns what runbox said about it: stderr for run,
// the job's violations and warning for start.
func doorRun(t *testing.T, u user, env []string, door, profile, ws string) string {
	t.Helper()
	if door == "run" {
		out, errOut, _ := u.run(t, env, "--yolo", "--sandbox", profile, "run", "--cwd", ws, "--", "bash ./plant.sh")
		if !strings.Contains(out, "planted") {
			t.Fatalf("run: the script did not run: %q %q", out, errOut)
		}
		return errOut
	}
	out, errOut, code := u.run(t, env, "--yolo", "--sandbox", profile, "start", "--cwd", ws, "--", "bash ./plant.sh")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if _, errOut, code := u.run(t, env, "wait", "--timeout", "100s", id); code != 0 {
		t.Fatalf("wait %s: exit %d: %s", id, code, errOut)
	}
	ps, _, _ := u.run(t, env, "ps", "--json")
	var jobs []struct {
		ID         string
		Warning    string
		Violations []struct{ Op, Target, Rule, Source string } `json:"sandbox_violations"`
	}
	json.Unmarshal([]byte(ps), &jobs)
	for _, j := range jobs {
		if j.ID != id {
			continue
		}
		var said []string
		for _, v := range j.Violations {
			if v.Op == "git" && v.Source == "decided" {
				said = append(said, v.Rule)
			}
		}
		return strings.Join(said, " ") + " | " + j.Warning
	}
	t.Fatalf("job %s not in ps --json: %s", id, ps)
	return ""
}

// TestSandbox_FifoLeftForGitHangsNothing: a confined command that leaves
// fifos where git reads (a nested repository's config, a .git entry, a
// gitdir file's target) cannot hang its own end, which reads those places
// to make them inert: runbox run returns, and says what it moved aside;
// the next command runs. As root and as an unprivileged user.
func TestSandbox_FifoLeftForGitHangsNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			_, env, ws := gitWorkspace(t, u, "ws-fifo")
			plant := `git init -q sub && rm sub/.git/config && mkfifo sub/.git/config
mkdir plain && mkfifo plain/.git
mkfifo target && mkdir pointed && echo "gitdir: ../target" > pointed/.git
echo planted`
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := u.command(ctx, env, "--yolo", "run", "--cwd", ws, "--", plant)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("runbox run did not return: %s", out)
			}
			if !strings.Contains(string(out), "planted") || !strings.Contains(string(out), "not a regular file") {
				t.Errorf("run: %v %q; want the plant to run and the fifo config moved aside", err, out)
			}
			if out, errOut, code := u.run(t, env, "--yolo", "run", "--cwd", ws, "--", "echo next"); code != 0 || out != "next\n" {
				t.Errorf("the next command: exit %d %q %s", code, out, errOut)
			}
		})
	}
}

// TestSandbox_LinkedGitConfigLeaksNothing: a confined command that links a
// nested repository's config to a credentials file on the deny list gets
// nothing from runbox's check after it: no copy of the file in the workspace for its next
// command to read, and the file unchanged. The control: the file is
// readable with the sandbox off, and not to the confined command itself.
// As root and as an unprivileged user.
func TestSandbox_LinkedGitConfigLeaksNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, env, ws := gitWorkspace(t, u, "ws-linked")
			secret := "[client]\n\tpassword = FAKE-SECRET-123\n[core]\n\tpager = x\n"
			writeOwned(t, u, filepath.Join(home, ".my.cnf"), secret, 0o600)
			if out, _, _ := u.run(t, env, "--yolo", "--sandbox", "off", "run", "--cwd", ws, "--", "cat ~/.my.cnf"); !strings.Contains(out, "FAKE-SECRET-123") {
				t.Fatalf("control: the file is not readable unconfined: %q", out)
			}
			plant := `cat ~/.my.cnf; git init -q s1 && ln -sf ~/.my.cnf s1/.git/config && echo planted`
			out, errOut, _ := u.run(t, env, "--yolo", "run", "--cwd", ws, "--", plant)
			if strings.Contains(out, "FAKE-SECRET-123") || !strings.Contains(out, "planted") {
				t.Fatalf("plant: %q %q", out, errOut)
			}
			out, _, _ = u.run(t, env, "--yolo", "run", "--cwd", ws, "--", "cat s1/.git/config* 2>/dev/null; grep -rl FAKE-SECRET . 2>/dev/null; true")
			if strings.Contains(out, "FAKE-SECRET-123") {
				t.Errorf("the next confined command read the secret from the workspace: %q", out)
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".my.cnf")); string(b) != secret {
				t.Errorf("~/.my.cnf was rewritten: %q", b)
			}
		})
	}
}

// gitWorkspace is u's home, the environment runbox runs with, and a new
// repository with one commit named name beside the home.
func gitWorkspace(t *testing.T, u user, name string) (home string, env []string, ws string) {
	t.Helper()
	home, _, _ = sandboxDirs(t, u)
	env = []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
	ws = mkdirOwned(t, u, filepath.Join(filepath.Dir(home), name))
	gitRepo(t, u, home, ws)
	return home, env, ws
}

// TestSandbox_ClosedDirectoryHidesNoRepository: a confined command that
// plants a repository with a core.fsmonitor inside a directory it then
// closes to its owner (chmod 111: not listable, still enterable) gets it
// made inert all the same, and the directory its mode back; the user's
// git, run after they open the directory again, runs nothing. The
// control: the same plant with the sandbox off runs. As an unprivileged
// user (root lists the directory anyway) and as root.
func TestSandbox_ClosedDirectoryHidesNoRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			for _, sandbox := range []string{"off", "workspace"} {
				home, env, ws := gitWorkspace(t, u, "ws-closed-"+sandbox)
				marker := filepath.Join(home, "RAN-closed-"+sandbox)
				plant := `mkdir -p d/sub && cd d/sub && git init -q && git config core.fsmonitor "touch ` + marker + `; false" && cd - >/dev/null && chmod 111 d && echo planted`
				out, errOut, _ := u.run(t, env, "--yolo", "--sandbox", sandbox, "run", "--cwd", ws, "--", plant)
				if !strings.Contains(out, "planted") {
					t.Fatalf("%s: plant: %q %q", sandbox, out, errOut)
				}
				if fi, err := os.Stat(filepath.Join(ws, "d")); err != nil || fi.Mode().Perm() != 0o111 {
					t.Errorf("%s: d's mode after the check: %v %v; want 0111 back", sandbox, fi.Mode(), err)
				}
				if err := os.Chmod(filepath.Join(ws, "d"), 0o755); err != nil {
					t.Fatal(err)
				}
				hostGit(t, u, home, filepath.Join(ws, "d", "sub"), "status")
				_, err := os.Stat(marker)
				if ran := err == nil; ran != (sandbox == "off") {
					t.Errorf("%s: the planted fsmonitor ran: %v; want %v (%q)", sandbox, ran, sandbox == "off", errOut)
				}
			}
		})
	}
}
