package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/server"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/workspace"
)

const syncImage = "runbox-test-debian:bookworm"

// needDocker skips (or, under RUNBOX_INTEGRATION=require, fails) when no
// engine answers or the test image is missing.
func needDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	why := ""
	if err := exec.CommandContext(ctx, "docker", "version").Run(); err != nil {
		why = "no docker engine answers (scripts/docker/start-dockerd.sh starts one)"
	} else if err := exec.CommandContext(ctx, "docker", "image", "inspect", syncImage).Run(); err != nil {
		why = "image " + syncImage + " missing (scripts/docker/build-images.sh builds it)"
	}
	if why == "" {
		return
	}
	integration.Skip(t, "%s", why)
}

// TestSync_PushBeforeCommandsAndDiff: with Sync set, a session's
// commands run in the task's workspace with the local directory pushed
// before each of them (local edits show up in the next command), and the
// sync tool's diff reports what the commands changed.
func TestSync_PushBeforeCommandsAndDiff(t *testing.T) {
	needDocker(t)
	task := fmt.Sprintf("server-sync-test-%s", strings.ToLower(rand.Text()[:8]))
	t.Cleanup(func() {
		exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=io.runbox.task="+task+")").Run()
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	cfg := config.Default()
	cfg.Docker.Image = syncImage
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := server.New(server.Options{
		Service: svc, Backend: "docker",
		Sync: &server.SyncOptions{Workspace: workspace.Options{Task: task, Dir: dir, StateDir: filepath.Join(t.TempDir(), "state")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cs := connect(t, srv, nil)

	out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "pwd; cat a.txt; echo ALPHA > a.txt"})
	if out["output"] != "/workspace\nalpha\n" {
		t.Fatalf("first command output = %q", out["output"])
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	out, _ = mustOK(t, cs, "terminal", map[string]any{"command": "cat b.txt"})
	if out["output"] != "beta\n" {
		t.Fatalf("a local file added after the first push: output = %q", out["output"])
	}
	res, txt := mustOK(t, cs, "sync", map[string]any{"action": "diff"})
	changes, _ := res["changes"].([]any)
	if len(changes) != 1 || !strings.Contains(txt, "-alpha\n+ALPHA\n") {
		t.Fatalf("sync diff = %v\n%s", res, txt)
	}
	if c := changes[0].(map[string]any); c["path"] != "a.txt" || c["kind"] != "modified" {
		t.Errorf("change = %v; want a.txt modified", c)
	}
	res, _ = mustOK(t, cs, "sync", map[string]any{"action": "push"})
	if p, _ := res["push"].(map[string]any); p == nil || p["full"] != false {
		t.Errorf("push = %v; want an incremental push", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("the server wrote the local a.txt: %q", b)
	}
}
