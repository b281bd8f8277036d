package docker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/internal/integration"
)

// guardRules are the host firewall rules of the egress network on bridge.
func guardRules(t *testing.T, bridge string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "iptables", "-w", "-S", "INPUT").Output()
	if err != nil {
		t.Fatalf("iptables -S INPUT: %v", err)
	}
	var rules []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "runbox-egress:"+bridge) {
			rules = append(rules, strings.TrimSpace(line))
		}
	}
	return rules
}

func exists(t *testing.T, cli *client.Client, id string) bool {
	t.Helper()
	_, err := cli.NetworkInspect(t.Context(), id, network.InspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestReapNetworks: an egress network a crashed process left (guarded,
// never closed) is removed with its firewall rules by the reaper, and so
// are the rules of a network that went without them; a network younger
// than the age is left alone (the control: it is the same kind of
// network, so the reaper is what removed the first).
func TestReapNetworks(t *testing.T) {
	cli := engine(t, "")
	if err := docker.CheckEgress(); err != nil {
		integration.Skip(t, "%v", err)
	}
	ctx := t.Context()
	// An owner of its own, so that reaping at any age touches no other
	// test's network.
	owner := "reap-test-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	crashed, err := docker.NewEgressNetwork(ctx, cli, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crashed.Close(context.Background()) })
	if err := crashed.Guard(ctx, 1); err != nil {
		t.Fatal(err)
	}
	bare, err := docker.NewEgressNetwork(ctx, cli, owner)
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.Guard(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The network goes, its rules stay: a crash between the two.
	if err := cli.NetworkRemove(ctx, bare.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(guardRules(t, crashed.Bridge)); n != 3 {
		t.Fatalf("a guarded network has %d firewall rules; want 3", n)
	}

	if _, err := docker.ReapNetworks(ctx, cli, owner, time.Hour); err != nil {
		t.Fatal(err)
	}
	if !exists(t, cli, crashed.ID) || len(guardRules(t, crashed.Bridge)) != 3 {
		t.Fatal("ReapNetworks removed a network younger than its age")
	}
	removed, err := docker.ReapNetworks(ctx, cli, owner, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if exists(t, cli, crashed.ID) {
		t.Errorf("the crashed process's network %s is still there (removed %v)", crashed.Name, removed)
	}
	for _, b := range []string{crashed.Bridge, bare.Bridge} {
		if r := guardRules(t, b); len(r) != 0 {
			t.Errorf("firewall rules of %s left: %q", b, r)
		}
	}
}
