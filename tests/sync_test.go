package tests

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// syncImage is the image the sync tests' task containers run.
const syncImage = "runbox-test-debian:bookworm"

// needDockerImage skips (or, where integration tests must run, fails)
// without a docker engine holding image.
func needDockerImage(t *testing.T, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run(); err != nil {
		integration.Skip(t, "no docker engine with image %s (scripts/docker/start-dockerd.sh, scripts/docker/build-images.sh): %v", image, err)
	}
}

// TestSync_ContainerMadeAgainLosesNothing protects, through the binary as
// shipped, the promise that a task's container removed and made again
// (or its /workspace replaced) never costs the user a file: sync diff
// infers no deletion, sync apply deletes nothing, and the next run --sync
// sends everything again, saying why; what a replaced /workspace held is
// moved aside in the container, not deleted. The control: in the tree
// runbox pushed, a deletion is one.
func TestSync_ContainerMadeAgainLosesNothing(t *testing.T) {
	needDockerImage(t, syncImage)
	task := "sync-again-" + strings.ToLower(rand.Text()[:8])
	container := func() string {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=io.runbox.task="+task).Output()
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() {
		if c := container(); c != "" {
			exec.Command("sh", "-c", "docker rm -f "+strings.Join(strings.Fields(c), " ")).Run()
		}
	})
	u := users(t)[0]
	home := u.home(t)
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
	dir := filepath.Join(home, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"important.txt": "my work\n", "a.txt": "alpha\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task1 := []string{"--backend", "docker", "--image", syncImage, "--task", task}
	runIn := func(script string) (string, string) {
		t.Helper()
		out, errOut, code := u.run(t, env, append(append([]string{"run", "--sync", dir}, task1...), "--", script)...)
		if code != 0 {
			t.Fatalf("run --sync %q: exit %d, stdout %q, stderr %q", script, code, out, errOut)
		}
		return out, errOut
	}
	diff := func() (kinds map[string]string, baseLost string) {
		t.Helper()
		out, errOut, code := u.run(t, env, append([]string{"sync", "diff", "--json"}, task1[2:]...)...)
		var got struct {
			Changes  []struct{ Path, Kind string }
			BaseLost string `json:"base_lost"`
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("sync diff --json: exit %d, %v: %s %s", code, err, out, errOut)
		}
		kinds = map[string]string{}
		for _, c := range got.Changes {
			kinds[c.Path] = c.Kind
		}
		return kinds, got.BaseLost
	}

	// The control: the tree runbox pushed, a deletion in it.
	runIn("rm a.txt")
	if kinds, lost := diff(); lost != "" || kinds["a.txt"] != "deleted" {
		t.Fatalf("control: changes %v, base lost %q; want a.txt deleted", kinds, lost)
	}
	runIn("echo alpha > a.txt") // back as it was

	// The container is removed behind runbox's back; the next command
	// of the task gets a new one, without the pushed tree.
	if out, err := exec.Command("sh", "-c", "docker rm -f "+container()).CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v: %s", err, out)
	}
	kinds, lost := diff()
	if lost == "" {
		t.Errorf("sync diff in a new container: no base_lost; changes %v", kinds)
	}
	for p, k := range kinds {
		if k == "deleted" {
			t.Errorf("sync diff in a new container: %s %s", p, k)
		}
	}
	out, errOut, code := u.run(t, env, append([]string{"sync", "apply"}, task1[2:]...)...)
	if code != 0 || strings.Contains(out, "deleted") || !strings.Contains(errOut, "not the tree last pushed") {
		t.Errorf("sync apply in a new container: exit %d, stdout %q, stderr %q; want nothing deleted, and why", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "important.txt")); err != nil || string(b) != "my work\n" {
		t.Fatalf("important.txt after sync apply: %q, %v", b, err)
	}
	out, errOut = runIn("ls -A")
	if out != ".runbox-sync\na.txt\nimportant.txt\n" || !strings.Contains(errOut, "everything is sent again") {
		t.Errorf("run --sync in a new container: stdout %q, stderr %q; want everything sent, and why", out, errOut)
	}

	// /workspace replaced by something runbox did not push (another
	// image's, say): its files are conflicts, not deletions, and the next
	// push keeps them aside.
	if out, err := exec.Command("docker", "exec", container(), "sh", "-c",
		"rm -rf /workspace && mkdir /workspace && echo theirs > /workspace/important.txt").CombinedOutput(); err != nil {
		t.Fatalf("docker exec: %v: %s", err, out)
	}
	if kinds, lost := diff(); lost == "" || len(kinds) != 1 || kinds["important.txt"] != "conflict" {
		t.Errorf("sync diff of a replaced /workspace: changes %v, base lost %q; want important.txt a conflict only", kinds, lost)
	}
	_, errOut = runIn("cat important.txt")
	i := strings.Index(errOut, "/workspace.runbox-before-")
	if i < 0 {
		t.Fatalf("run --sync over a replaced /workspace: stderr %q; want where it was kept", errOut)
	}
	aside := strings.Fields(errOut[i:])[0]
	if out, _ := runIn("cat " + aside + "/important.txt"); out != "theirs\n" {
		t.Errorf("what /workspace held, at %s: %q; want it kept", aside, out)
	}
}
