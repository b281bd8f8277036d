package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/server"
)

// openStream opens the standalone SSE stream of session with a GET that
// names no Last-Event-ID, as a client that lost track of it does: until
// the server has seen the previous stream cut, the stream is still that
// one's and the GET is refused with 409, so it tries again.
func openStream(t *testing.T, ctx context.Context, url, session string) *http.Response {
	t.Helper()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET the stream: %v", err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("GET the stream: HTTP %d: %s", resp.StatusCode, b)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET the stream: still HTTP 409 (%s) when the wait ended", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestHTTP_StreamReconnectWithoutLastEventID: a client that reconnects
// its standalone stream without Last-Event-ID is sent only what it was
// not sent: the completion notice of a job it already received does not
// come a second time (the SDK replayed the stream from its start), while
// the next job's does.
func TestHTTP_StreamReconnectWithoutLastEventID(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	cs := connectHTTP(t, url, http.DefaultClient, true, nil) // its stream is the test's
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// until reads the stream until an event holds want, and returns the
	// events read.
	until := func(events <-chan sseEvent, want string) []sseEvent {
		t.Helper()
		var got []sseEvent
		for {
			select {
			case ev, open := <-events:
				if !open {
					t.Fatalf("the stream ended before %q; got %+v", want, got)
				}
				got = append(got, ev)
				if strings.Contains(ev.data, want) {
					return got
				}
			case <-ctx.Done():
				t.Fatalf("no %q on the stream; got %+v", want, got)
			}
		}
	}
	job := func(cmd string) string {
		out, _ := mustOK(t, cs, "terminal", map[string]any{"command": cmd, "background": true, "notify_on_complete": true})
		return out["session_id"].(string)
	}

	first := openStream(t, ctx, url, cs.ID())
	events := make(chan sseEvent)
	go readEvents(first.Body, events)
	one := job("echo one")
	until(events, "[background job "+one+" completed")
	first.Body.Close()
	for range events {
	}

	second := openStream(t, ctx, url, cs.ID())
	defer second.Body.Close()
	events = make(chan sseEvent)
	go readEvents(second.Body, events)
	two := job("echo two")
	got := until(events, "[background job "+two+" completed")
	for _, ev := range got {
		if strings.Contains(ev.data, "[background job "+one+" completed") {
			t.Errorf("the reconnected stream repeated job %s's completion notice (event %s)", one, ev.id)
		}
	}
}

// TestHTTP_CancelledNotAnswered: a request the client cancelled
// (notifications/cancelled) is not answered, neither on its stream nor
// in a replay of that stream (Last-Event-ID); its command is stopped.
func TestHTTP_CancelledNotAnswered(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	cs := connectHTTP(t, url, http.DefaultClient, true, nil)
	b := make([]byte, 8)
	rand.Read(b)
	mark := "RB_CANCEL_MARK=" + hex.EncodeToString(b)
	t.Cleanup(func() { killMarked(t, mark) })

	resp := rawPost(t, url, cs.ID(), `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"terminal","arguments":{"command":"`+mark+` sleep 3600"}}}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("tools/call answered %s, not a stream", ct)
	}
	events := make(chan sseEvent)
	go readEvents(resp.Body, events)
	testwait.Until(t, "the command running", func() bool { return len(marked(t, mark)) > 0 })
	if c := rawPost(t, url, cs.ID(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"changed my mind"}}`); c.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancellation: HTTP %d", c.StatusCode)
	}
	testwait.Until(t, "the cancelled command stopped", func() bool { return len(marked(t, mark)) == 0 })
	last := ""
	timeout := time.After(60 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-events:
			if !ok {
				open = false
				break
			}
			if ev.id != "" {
				last = ev.id
			}
			if strings.Contains(ev.data, `"id":"slow"`) {
				t.Fatalf("the cancelled request was answered: %s", ev.data)
			}
		case <-timeout:
			t.Fatal("the cancelled request's stream did not end")
		}
	}
	if last == "" {
		return // nothing to resume from
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	replay := resume(t, ctx, url, cs.ID(), last, strconv.Itoa(100))
	defer replay.Body.Close()
	events = make(chan sseEvent)
	go readEvents(replay.Body, events)
	for ev := range events {
		if strings.Contains(ev.data, `"id":"slow"`) {
			t.Fatalf("the replay answered the cancelled request: %s", ev.data)
		}
	}
}
