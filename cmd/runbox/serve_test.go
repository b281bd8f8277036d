package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServe_Stdio drives `runbox serve` over its stdin and stdout with
// the SDK's client: a command runs in the session, a background job runs
// in the per-user job daemon and its completion arrives as a log
// notification, and closing stdin ends the server and the session.
func TestServe_Stdio(t *testing.T) {
	env := jobsEnv(t)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb strings.Builder
	a := newApp(inR, outW, &lockedWriter{w: &errb}, getenv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := a.execute(ctx, []string{"serve"})
		outW.Close()
		done <- err
	}()

	var mu sync.Mutex
	var notices []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params.Data)
			mu.Lock()
			notices = append(notices, string(b))
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errb.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo from-serve"}})
	if err != nil || res.IsError {
		t.Fatalf("terminal: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"output":"from-serve\n"`) {
		t.Errorf("result = %s", b)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo bg", "background": true, "notify_on_complete": true}})
	if err != nil || res.IsError {
		t.Fatalf("background terminal: %v %+v", err, res)
	}
	var started struct {
		SessionID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &started)
	want := "[background job " + started.SessionID + " completed: exit 0]"
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(notices, "\n")
		mu.Unlock()
		if strings.Contains(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completion notice %q; got %s\nstderr: %s", want, got, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs.Close()
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve ended with %v\n%s", err, errb.String())
		}
	case <-ctx.Done():
		t.Fatal("serve did not end when its stdin closed")
	}
}

// lockedWriter serialises writes from the server's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
