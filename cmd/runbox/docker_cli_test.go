package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
	if os.Getenv("RUNBOX_INTEGRATION") == "require" {
		t.Fatal(why)
	}
	t.Skip(why)
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
