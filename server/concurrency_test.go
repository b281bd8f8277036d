package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// alphabet is cut into each payload line at a shifting offset.
const alphabet = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"

// payload is what payloadCommand(i) prints: i on every line and 4 KiB in
// all, so a lost, cut or swapped byte, or another call's output, shows.
func payload(i int) string {
	var b strings.Builder
	for j := range 64 {
		off := (i + j) % 26
		fmt.Fprintf(&b, "cmd %04d line %02d %s\n", i, j, alphabet[off:off+48])
	}
	return b.String()
}

// payloadCommand prints payload(i) with bash builtins only.
func payloadCommand(i int) string {
	return fmt.Sprintf(`s=%s; for j in {0..63}; do printf 'cmd %%04d line %%02d %%s\n' %d "$j" "${s:(%d+j)%%26:48}"; done`, alphabet, i, i)
}

// TestTerminal_ParallelCallsLoseNoOutput protects the promise that one
// MCP session serves parallel terminal calls without losing output: 250
// calls, 50 at a time, in one session, every byte of every result
// checked. Results used to come back empty with exit 0 now and then (the
// environment cut its output pipe before a late copier had read it).
func TestTerminal_ParallelCallsLoseNoOutput(t *testing.T) {
	srv, _ := newServer(t, nil)
	cs := connect(t, srv, nil)
	mustOK(t, cs, "terminal", map[string]any{"command": "true"}) // the session's environment, opened once
	const n, workers = 250, 50
	jobs := make(chan int)
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": payloadCommand(i)}})
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					bad = append(bad, fmt.Sprintf("call %d: %v", i, err))
				case res.IsError:
					bad = append(bad, fmt.Sprintf("call %d failed: %s", i, text(res)))
				default:
					out := structured(t, res)
					if got, _ := out["output"].(string); got != payload(i) || out["exit_code"] != 0.0 {
						bad = append(bad, fmt.Sprintf("call %d: exit %v, %d bytes (want %d), warnings %v", i, out["exit_code"], len(got), len(payload(i)), out["warnings"]))
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
}
