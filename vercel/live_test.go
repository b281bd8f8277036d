//go:build cloud

package vercel_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/vercel"
)

// TestLive_Lifecycle runs against Vercel itself (go test -tags cloud,
// with VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID): create, the
// agent over the interactive PTY, session state, files, stop at close.
func TestLive_Lifecycle(t *testing.T) {
	creds, err := vercel.CredentialsFrom(os.Getenv)
	if err != nil {
		t.Skipf("no Vercel credentials: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	o := vercel.Options{Credentials: creds, Runtime: "node22", Timeout: 5 * time.Minute, Owner: "runbox-live-test",
		Task: fmt.Sprintf("live-%d", time.Now().UnixNano())}
	env, err := vercel.New(ctx, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer env.Close(context.WithoutCancel(ctx))
	res, err := env.Run(ctx, envs.Command{Shell: "cd /tmp && export X=42; echo out; echo err >&2; exit 3", SeparateStreams: true})
	if err != nil || res.Code != 3 || res.Output != "out\n" || res.Stderr != "err\n" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	res, err = env.Run(ctx, envs.Command{Shell: "pwd; echo $X"})
	if err != nil || res.Output != "/tmp\n42\n" {
		t.Fatalf("session state = %+v, %v", res, err)
	}
	if err := env.PutFile(ctx, "/tmp/runbox-live/f.bin", strings.NewReader("payload\x00\xff"), 0o600); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	rc, err := env.GetFile(ctx, "/tmp/runbox-live/f.bin")
	if err != nil {
		t.Fatalf("GetFile: %v", err)
	}
	rc.Close()
}
