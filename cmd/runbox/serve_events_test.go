package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/server"
)

// TestServe_StdioEventsResource drives the real binary over stdio with
// the SDK's stock client subscribed to the job events resource: a
// background job's completion is announced (resources/updated), the
// read returns it once, a second read returns none, and no log message
// carries it. Without this a client could subscribe and never hear.
func TestServe_StdioEventsResource(t *testing.T) {
	env := jobsEnv(t)
	cmd := exec.Command(os.Args[0], "serve", "--sandbox", "off")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG=", "HOME="+cmd.Dir,
		"RUNBOX_STATE_DIR="+env["RUNBOX_STATE_DIR"], "RUNBOX_OWNER="+env["RUNBOX_OWNER"])
	var errb strings.Builder
	cmd.Stderr = &lockedWriter{w: &errb}
	defer func() {
		if t.Failed() {
			t.Logf("runbox serve's stderr:\n%s", errb.String())
		}
	}()

	updated := make(chan string, 16)
	var logs atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Logger == "runbox.jobs" {
				logs.Add(1)
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close() // closes its stdin; serve ends with it
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: server.EventsURI}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{
		"command": "echo from-binary; exit 2", "background": true, "notify_on_complete": true,
	}})
	if err != nil || res.IsError {
		t.Fatalf("background terminal: %v %+v", err, res)
	}
	var started struct {
		ID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &started)

	select {
	case uri := <-updated:
		if uri != server.EventsURI {
			t.Errorf("updated %q; want %s", uri, server.EventsURI)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated for the job's completion")
	}
	read := func() server.JobEvents {
		t.Helper()
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: server.EventsURI})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("read: %v %+v", err, r)
		}
		var je server.JobEvents
		if err := json.Unmarshal([]byte(r.Contents[0].Text), &je); err != nil || je.Events == nil {
			t.Fatalf("read: %q: %v", r.Contents[0].Text, err)
		}
		return je
	}
	je := read()
	if len(je.Events) != 1 || je.Events[0].Event.Job != started.ID || je.Events[0].Event.Type != "completion" ||
		!strings.HasPrefix(je.Events[0].Message, "[background job "+started.ID+" completed: exit 2]") {
		t.Errorf("read = %+v; want the one completion of %s, exit 2", je, started.ID)
	}
	if again := read(); len(again.Events) != 0 {
		t.Errorf("second read = %+v; want none", again)
	}
	if n := logs.Load(); n != 0 {
		t.Errorf("%d job log messages sent to a subscribed client", n)
	}
}
