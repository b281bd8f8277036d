//go:build cloud

package modal_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/modal"
)

// TestLive_Modal runs against Modal itself when credentials are set
// (go test -tags cloud ./modal/): create, exec, put/get, snapshot on
// close, restore on reopen, terminate.
func TestLive_Modal(t *testing.T) {
	if _, err := modal.ResolveCredentials(os.Getenv); err != nil {
		t.Skipf("no Modal credentials: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := modal.Options{
		Image: "python:3.12-slim", Owner: "runbox-live-test", Task: "live-" + time.Now().Format("150405"),
		Persistent: true, StateDir: t.TempDir(), Timeout: 10 * time.Minute, Workdir: "/root",
		AgentBinary: agentBin,
	}
	env, err := modal.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Run(ctx, envs.Command{Shell: "echo hello; echo kept > /root/kept.txt"})
	if err != nil || strings.TrimSpace(res.Output) != "hello" {
		t.Fatalf("run: %+v %v", res, err)
	}
	if err := env.PutFile(ctx, "/root/put.txt", strings.NewReader("payload"), 0o644); err != nil {
		t.Fatalf("put: %v", err)
	}
	rc, err := env.GetFile(ctx, "/root/put.txt")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "payload" {
		t.Fatalf("get: %q %v", got, err)
	}
	if err := env.Close(ctx); err != nil {
		t.Fatalf("close (snapshot, terminate): %v", err)
	}
	env, err = modal.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	res, err = env.Run(ctx, envs.Command{Shell: "cat /root/kept.txt"})
	if err != nil || strings.TrimSpace(res.Output) != "kept" {
		t.Fatalf("after restore: %+v %v", res, err)
	}
}
