package docker

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// TestSweepPools_RemovesOnlyOrphans: a container of a pool whose process
// died (no agent exec running in it) is removed; one with an exec running
// (a live pool's, or one handed out and in use) is kept. Without this a
// crashed server would leave its idle containers running for good.
func TestSweepPools_RemovesOnlyOrphans(t *testing.T) {
	const image = "runbox-test-busybox:latest"
	cli, err := NewClient()
	if err != nil {
		integration.Skip(t, "no docker client: %v", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(t.Context(), image); err != nil {
		integration.Skip(t, "no docker engine or image %s: %v", image, err)
	}
	pool := "sweep-test-" + randomID()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	orphan := run("run", "-d", "--label", LabelPool+"="+pool, image, "sleep", "300")
	live := run("run", "-d", "--label", LabelPool+"="+pool, image, "sleep", "300")
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", orphan, live).Run() })
	run("exec", "-d", live, "sleep", "300")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// docker exec -d returns before the exec is seen running: poll.
	for {
		ci, err := cli.ContainerInspect(ctx, live)
		if err != nil {
			t.Fatal(err)
		}
		if len(ci.ExecIDs) > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the exec never showed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, err := sweepPools(ctx, cli, 0, pool)
	if err != nil || n != 1 {
		t.Fatalf("sweepPools = %d, %v; want the one orphan", n, err)
	}
	if _, err := cli.ContainerInspect(ctx, orphan); err == nil {
		t.Errorf("the orphan is still there")
	}
	if _, err := cli.ContainerInspect(ctx, live); err != nil {
		t.Errorf("the container with a running exec was removed: %v", err)
	}
}
