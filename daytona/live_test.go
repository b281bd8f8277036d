//go:build cloud

package daytona_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
)

// TestLive_Lifecycle runs against Daytona itself (go test -tags cloud,
// with DAYTONA_API_KEY): create, exec, upload and download, stop, start,
// delete.
func TestLive_Lifecycle(t *testing.T) {
	c, err := daytona.CredentialsFrom(os.Getenv)
	if err != nil {
		t.Skipf("no Daytona credentials: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	o := daytona.Options{Credentials: c, Owner: "runbox-live-test", Persistent: true,
		Task: fmt.Sprintf("live-%d", time.Now().UnixNano())}
	env, err := daytona.New(ctx, o)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := env.ID()
	defer daytona.Remove(context.WithoutCancel(ctx), c, id)
	res, err := env.Run(ctx, envs.Command{Shell: "echo out; echo err >&2; exit 3", SeparateStreams: true})
	if err != nil || res.Code != 3 || res.Output != "out\n" || res.Stderr != "err\n" {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	if err := env.PutFile(ctx, "/tmp/runbox-live/f.txt", strings.NewReader("payload"), 0o600); err != nil {
		t.Fatalf("upload: %v", err)
	}
	rc, err := env.GetFile(ctx, "/tmp/runbox-live/f.txt")
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "payload" {
		t.Fatalf("download = %q", data)
	}
	if err := env.Close(ctx); err != nil { // stops it
		t.Fatalf("stop: %v", err)
	}
	env, err = daytona.New(ctx, o) // finds and starts it
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if env.ID() != id {
		t.Fatalf("reopened %s; want %s", env.ID(), id)
	}
	if res, err := env.Run(ctx, envs.Command{Shell: "cat /tmp/runbox-live/f.txt"}); err != nil || res.Output != "payload" {
		t.Fatalf("after restart = %+v, %v", res, err)
	}
	env.Close(ctx)
	if err := daytona.Remove(ctx, c, id); err != nil {
		t.Fatalf("delete: %v", err)
	}
}
