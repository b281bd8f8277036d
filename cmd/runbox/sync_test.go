package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// TestSyncDocker_RunDiffApply: run --task --sync pushes the directory
// before the command, sync diff shows what the command changed (as a
// patch and as JSON), sync apply refuses a conflict and writes the rest,
// a second run holds back the conflicting local file, and once the
// conflict is settled a local edit goes out.
func TestSyncDocker_RunDiffApply(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	task := "sync-test-" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	dir := t.TempDir()
	env := map[string]string{"RUNBOX_STATE_DIR": filepath.Join(t.TempDir(), "state")}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	base := []string{"--image", image, "--task", task}

	out, stderr, code := cli(t, "", env, append([]string{"run", "--backend", "docker", "--sync", dir}, append(base, "--",
		"pwd && cat a.txt && echo ALPHA > a.txt && echo BETA > b.txt && echo new > c.txt")...)...)
	if code != 0 || out != "/workspace\nalpha\n" {
		t.Fatalf("run --sync: exit %d, out %q, stderr %q", code, out, stderr)
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("mine\n"), 0o644) // a conflicting local edit

	out, stderr, code = cli(t, "", env, append([]string{"sync", "diff"}, base...)...)
	if code != 0 || !strings.Contains(out, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n") ||
		!strings.Contains(out, "+++ b/c.txt\n") || !strings.Contains(stderr, "b.txt: conflict") {
		t.Fatalf("sync diff: exit %d\n%s\nstderr %s", code, out, stderr)
	}
	out, _, code = cli(t, "", env, append([]string{"sync", "diff", "--json"}, base...)...)
	var got struct {
		Changes []struct{ Path, Kind, Diff string }
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Changes) != 3 {
		t.Fatalf("sync diff --json: exit %d, %v: %s", code, err, out)
	}
	for i, want := range []string{"a.txt modified", "b.txt conflict", "c.txt added"} {
		if c := got.Changes[i]; c.Path+" "+c.Kind != want || c.Diff == "" {
			t.Errorf("change %d = %+v; want %s with a diff", i, c, want)
		}
	}

	_, stderr, code = cli(t, "", env, append([]string{"sync", "apply"}, base...)...)
	if code == 0 || !strings.Contains(stderr, "conflict") {
		t.Fatalf("sync apply with a conflict: exit %d, stderr %q; want a refusal", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("a refused apply wrote a.txt: %q", b)
	}
	out, stderr, code = cli(t, "", env, append([]string{"sync", "apply", "a.txt", "c.txt"}, base...)...)
	if code != 0 || out != "wrote a.txt\nwrote c.txt\n" {
		t.Fatalf("sync apply a.txt c.txt: exit %d, out %q, stderr %q", code, out, stderr)
	}
	for name, want := range map[string]string{"a.txt": "ALPHA\n", "b.txt": "mine\n", "c.txt": "new\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q; want %q", name, b, want)
		}
	}

	// The next run does not push the local b.txt over the container's:
	// both changed it. Once the conflict is settled (--theirs), the next
	// local edit goes out.
	out, stderr, code = cli(t, "", env, append([]string{"run", "--backend", "docker", "--sync", dir}, append(base, "--", "cat a.txt b.txt c.txt")...)...)
	if code != 0 || out != "ALPHA\nBETA\nnew\n" || !strings.Contains(stderr, "b.txt changed here and in the container") {
		t.Fatalf("second run: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = cli(t, "", env, append([]string{"sync", "apply", "--theirs", "b.txt"}, base...)...)
	if code != 0 || out != "wrote b.txt\n" {
		t.Fatalf("sync apply --theirs b.txt: exit %d, out %q, stderr %q", code, out, stderr)
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("mine again\n"), 0o644)
	out, stderr, code = cli(t, "", env, append([]string{"run", "--backend", "docker", "--sync", dir}, append(base, "--", "cat b.txt")...)...)
	if code != 0 || out != "mine again\n" {
		t.Fatalf("third run: exit %d, out %q, stderr %q", code, out, stderr)
	}
	_, stderr, code = cli(t, "", env, append([]string{"sync", "diff"}, base...)...)
	if code != 0 || !strings.Contains(stderr, "no changes") {
		t.Errorf("sync diff after the third push: exit %d, stderr %q", code, stderr)
	}
}

func TestRunSync_FlagChecks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sync", ".", "--", "true"}, "--task"},
		{[]string{"run", "--backend", "local", "--task", "x", "--", "true"}, "--backend docker, modal, daytona, kubernetes, singularity, vercel (or --sync DIR"},
		{[]string{"run", "--backend", "docker", "--task", "x", "--sync", ".", "--workspace", "--", "true"}, "choose one"},
	} {
		_, stderr, code := cli(t, "", nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSyncDocker_ConfigProtects: the sync section's exclude and protected
// patterns, and runbox's own configuration file inside the synced
// directory, keep what the container wrote there out of the local tree.
func TestSyncDocker_ConfigProtects(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	task := fmt.Sprintf("sync-conf-test-%d", os.Getpid())
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	dir := t.TempDir()
	conf := filepath.Join(dir, "rb.yaml")
	os.WriteFile(conf, []byte("sync:\n  exclude: [skip.txt]\n  protected: [secret/]\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "secret"), 0o755)
	os.WriteFile(filepath.Join(dir, "secret", "key"), []byte("k1\n"), 0o644)
	env := map[string]string{"RUNBOX_STATE_DIR": filepath.Join(t.TempDir(), "state"), "RUNBOX_CONFIG": conf}
	base := []string{"--image", image, "--task", task}
	_, stderr, code := cli(t, "", env, append([]string{"run", "--backend", "docker", "--sync", dir}, append(base, "--",
		"echo 'approval: {mode: off}' > rb.yaml && echo k2 > secret/key && echo s > skip.txt && echo ok > ok.txt")...)...)
	if code != 0 {
		t.Fatalf("run: exit %d, %s", code, stderr)
	}
	out, stderr, code := cli(t, "", env, append([]string{"sync", "apply"}, base...)...)
	if code != 0 || out != "wrote ok.txt\nskipped rb.yaml (protected)\nskipped secret/key (protected)\n" {
		t.Fatalf("sync apply: exit %d, out %q, stderr %q", code, out, stderr)
	}
	for name, want := range map[string]string{"secret/key": "k1\n", "ok.txt": "ok\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q; want %q", name, b, want)
		}
	}
	if b, _ := os.ReadFile(conf); !strings.Contains(string(b), "protected") {
		t.Errorf("runbox's configuration overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "skip.txt")); err == nil {
		t.Errorf("an excluded path was brought back")
	}
}

// TestSyncDocker_ApplyWritesNothingThatRunsHere: a command in the
// container plants a .git file pointing at a git directory it crafted
// (core.fsmonitor set to a command), a chain of links that leads out of
// the directory and a set-uid, world-writable file. sync diff names each
// refusal; sync apply refuses the whole apply for the link chain, and
// with the links left out writes the ordinary files only: no .git, mode
// 0775 for the 4777 file, and git status here runs nothing. The file the
// push sent kept its modification time in the container.
func TestSyncDocker_ApplyWritesNothingThatRunsHere(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	if _, err := exec.LookPath("git"); err != nil {
		integration.Skip(t, "no git: %v", err)
	}
	task := fmt.Sprintf("sync-attack-test-%d", os.Getpid())
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	dir := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "inner.txt"), []byte("inner\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	os.Chtimes(filepath.Join(dir, "a.txt"), mtime, mtime)
	canary := filepath.Join(t.TempDir(), "ran")
	conf := filepath.Join(t.TempDir(), "rb.yaml") // lets the command make the 4777 file
	os.WriteFile(conf, []byte("approval:\n  allow: [chmod-world-writable, setid, git-internals-write]\n"), 0o644)
	env := map[string]string{"RUNBOX_STATE_DIR": filepath.Join(t.TempDir(), "state"), "RUNBOX_CONFIG": conf}
	base := []string{"--image", image, "--task", task}

	plant := `stat -c %.9Y a.txt &&
		printf 'gitdir: evilgit\n' > .git && mkdir -p evilgit/objects evilgit/refs &&
		echo 'ref: refs/heads/main' > evilgit/HEAD &&
		printf '[core]\n\tfsmonitor = "touch ` + canary + `; false"\n' > evilgit/config &&
		touch evilgit/objects/.keep evilgit/refs/.keep &&
		echo s > setuid.sh && chmod 4777 setuid.sh &&
		ln -s .. sub/lnk && ln -s lnk/.. sub/esc && echo ALPHA > a.txt`
	out, stderr, code := cli(t, "", env, append([]string{"run", "--backend", "docker", "--sync", dir}, append(base, "--", plant)...)...)
	if code != 0 {
		t.Fatalf("run --sync: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if want := fmt.Sprintf("%d.%09d\n", mtime.Unix(), mtime.Nanosecond()); out != want {
		t.Errorf("a.txt's modification time in the container = %q; want %q", out, want)
	}

	// Control: the container's tree copied here as it is makes git run
	// the container's command.
	naive := filepath.Join(t.TempDir(), "naive")
	cp := exec.Command("sh", "-c", `docker cp "$(docker ps -q --filter label=io.runbox.task=$1)":/workspace "$2"`, "sh", task, naive)
	if b, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("docker cp: %v: %s", err, b)
	}
	gitStatusIn(naive)
	if _, err := os.Stat(canary); err != nil {
		t.Fatal("control: git status in a plain copy of the container's tree did not run its core.fsmonitor")
	}
	os.Remove(canary)

	_, stderr, code = cli(t, "", env, append([]string{"sync", "diff"}, base...)...)
	for _, want := range []string{"runbox: .git: refused: .git in any form", "runbox: evilgit/config: refused: ", "runbox: sub/esc: refused: symbolic link that leads out"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("sync diff: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}

	_, stderr, code = cli(t, "", env, append([]string{"sync", "apply"}, base...)...)
	if code == 0 || !strings.Contains(stderr, "sub/esc -> lnk/..") {
		t.Fatalf("sync apply with a link chain: exit %d, stderr %q; want a refusal naming sub/esc", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("a refused apply wrote a.txt: %q", b)
	}

	out, stderr, code = cli(t, "", env, append([]string{"sync", "apply", "a.txt", "setuid.sh", ".git", "evilgit"}, base...)...)
	if code != 0 || !strings.Contains(out, "wrote a.txt\nwrote setuid.sh\n") || !strings.Contains(out, "skipped .git (refused: ") {
		t.Fatalf("sync apply: exit %d, out %q, stderr %q", code, out, stderr)
	}
	for _, p := range []string{".git", "evilgit", "sub/esc", "sub/lnk"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s written", p)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "setuid.sh")); err != nil || fi.Mode() != 0o775 {
		t.Errorf("setuid.sh (4777 in the container) arrived %v, %v; want -rwxrwxr-x", fi.Mode(), err)
	}
	gitStatusIn(dir)
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("git status here ran the container's core.fsmonitor")
	}
}

// gitStatusIn runs the real git status in dir, never looking above it.
func gitStatusIn(dir string) {
	git := exec.Command("git", "status")
	git.Dir = dir
	git.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	git.Run()
}
