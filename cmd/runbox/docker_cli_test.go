package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// needDocker skips (or, under RUNBOX_INTEGRATION=require, fails) when no
// engine answers or the test image is missing.
func needDocker(t *testing.T, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	why := ""
	if err := exec.CommandContext(ctx, "docker", "version").Run(); err != nil {
		why = "no docker engine answers (scripts/docker/start-dockerd.sh starts one)"
	} else if err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run(); err != nil {
		why = "image " + image + " missing (scripts/docker/build-images.sh builds it)"
	}
	if why == "" {
		return
	}
	integration.Skip(t, "%s", why)
}

// TestRunDocker_LockedDown: a command in the docker backend has no
// effective capabilities beyond the documented set and NoNewPrivs set.
func TestRunDocker_LockedDown(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	out, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", image, "--", "cat /proc/self/status")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if fields["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q; want 1", fields["NoNewPrivs"])
	}
	if fields["CapEff"] != fields["CapBnd"] || fields["CapEff"] == "000001ffffffffff" || fields["CapEff"] == "" {
		t.Errorf("CapEff = %q, CapBnd = %q; want the reduced documented set", fields["CapEff"], fields["CapBnd"])
	}
}

// TestRunDocker_TimeoutKillsDaemon: a daemonised child of a timed-out
// command does not survive inside the container.
func TestRunDocker_TimeoutKillsDaemon(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	_, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", image, "--timeout", "2s", "--",
		"( setsid sleep 600 & ) ; nohup sleep 601 >/dev/null 2>&1 & sleep 60")
	if code != 124 {
		t.Fatalf("exit %d; want 124 (%s)", code, stderr)
	}
}

func TestRunDocker_BadImage(t *testing.T) {
	needDocker(t, "runbox-test-debian:bookworm")
	_, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", "runbox-no-such-image:nope", "--", "true")
	if code != 125 || !strings.Contains(stderr, "runbox-no-such-image") {
		t.Fatalf("exit %d stderr %q; want 125 naming the image", code, stderr)
	}
}

// TestRunDocker_Workspace: --workspace shows the current directory at
// /workspace, and the command starts there.
func TestRunDocker_Workspace(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	// From inside the source tree first, so the agent is built (or found)
	// before the test leaves it.
	if _, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", image, "--", "true"); code != 0 {
		t.Fatalf("warm-up: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/hello.txt", []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", image, "--workspace", "--", "pwd; cat hello.txt")
	if code != 0 || out != "/workspace\nfrom the host\n" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// TestJobsDocker_DurableOutput: a background job in a task's container,
// driven by separate CLI invocations as from separate shells, keeps its
// output readable from any offset after the CLI that started it exited,
// passes its exit code to wait, queues one completion, and is killed with
// its children.
func TestJobsDocker_DurableOutput(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	needContainerCLI(t)
	task := fmt.Sprintf("jobs-test-%s", strings.ToLower(rand.Text()[:8]))
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	d := func(sub string, rest ...string) []string {
		return append([]string{sub, "--backend", "docker", "--image", image, "--task", task}, rest...)
	}
	out, stderr, code := cli(t, "", nil, d("start", "--notify", "--", "for i in 1 2 3; do echo line $i; sleep 0.2; done; exit 5")...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 12 {
		t.Fatalf("start: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if out, _, code := cli(t, "", nil, d("wait", "--timeout", "30s", id)...); code != 5 || !strings.Contains(out, "exited 5") {
		t.Fatalf("wait: exit %d, %q; want 5", code, out)
	}
	out, stderr, _ = cli(t, "", nil, d("logs", "--offset", "7", id)...)
	if out != "line 2\nline 3\n" || !strings.Contains(stderr, "next offset 21") {
		t.Fatalf("logs --offset 7 = %q (stderr %q)", out, stderr)
	}
	out, _, _ = cli(t, "", nil, d("events")...)
	if strings.Count(out, `"type":"completion"`) != 1 || !strings.Contains(out, id) {
		t.Fatalf("events = %q; want one completion of %s", out, id)
	}
	// No cgroup access in the container: the job's supervisor is its
	// subreaper, so even the double-forked setsid child is found.
	out, _, _ = cli(t, "", nil, d("start", "--", "( setsid sleep 794 & ) ; nohup sleep 795 >/dev/null 2>&1 & sleep 796")...)
	id = strings.TrimSpace(out)
	if out, stderr, code := cli(t, "", nil, d("kill", id)...); code != 0 || !strings.Contains(out, "killed") {
		t.Fatalf("kill: exit %d, %q %q", code, out, stderr)
	}
	if out, _, _ := cli(t, "", nil, d("ps", "-a")...); !strings.Contains(out, id) || !strings.Contains(out, "killed") {
		t.Fatalf("ps after kill:\n%s", out)
	}
	// The gate runs here, before anything reaches the container: a
	// hardline write is refused, and nothing runs with --yolo in there.
	out, _, _ = cli(t, "", nil, d("start", "--", "cat")...)
	catID := strings.TrimSpace(out)
	if _, stderr, code := cli(t, "", nil, d("submit", catID, "rm -rf --no-preserve-root /")...); code != exitRunbox || !strings.Contains(stderr, "refused by the command gate") {
		t.Errorf("submit of a hardline line to a container's job: exit %d, %q", code, stderr)
	}
	cli(t, "", nil, d("kill", catID)...)
	ps, err := exec.Command("sh", "-c", "docker exec $(docker ps -q --filter label=io.runbox.task="+task+") ps -eo args").Output()
	if err != nil || strings.Contains(string(ps), "sleep 79") || strings.Contains(string(ps), "--yolo") {
		t.Fatalf("left in the container (%v):\n%s", err, ps)
	}
}

// A secret the caller's shell expanded into a command's text never shows
// in an argv inside the container either: the text is marked private and
// the agent hands it to the shell in a file.
func TestRunDocker_SecretTextNotInArgv(t *testing.T) {
	const image = "runbox-test-debian:bookworm"
	needDocker(t, image)
	const token = "ghp_dockerargvcheck12345"
	t.Setenv("GITHUB_TOKEN", token)
	out, stderr, code := cli(t, "", nil, "run", "--backend", "docker", "--image", image, "--", ": "+token+"; tr '\\0' ' ' < /proc/$$/cmdline; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(out, token) {
		t.Errorf("a process in the container shows the secret in its argv:\n%s", out)
	}
}
