package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/internal/testproc"
)

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
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": testproc.PayloadCommand(i)}})
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					bad = append(bad, fmt.Sprintf("call %d: %v", i, err))
				case res.IsError:
					bad = append(bad, fmt.Sprintf("call %d failed: %s", i, text(res)))
				default:
					out := structured(t, res)
					if got, _ := out["output"].(string); got != testproc.Payload(i) || out["exit_code"] != 0.0 {
						bad = append(bad, fmt.Sprintf("call %d: exit %v, %d bytes (want %d), warnings %v", i, out["exit_code"], len(got), len(testproc.Payload(i)), out["warnings"]))
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
