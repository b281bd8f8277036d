package local_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/local"
)

// TestEnv_ConcurrentRunsLoseNoOutput protects the promise that an Env is
// safe for concurrent use and that no output is lost under load: 400
// commands from 50 goroutines on one Env, every byte of every result
// checked. Under load the output copier of a command may not have run by
// the time DrainDelay has passed since the command exited; cutting the
// pipe then used to drop everything still in it, and results came back
// empty with exit 0 (a few in every 400 under -race on two cores). The
// TinyDrainDelay row makes that the common case: the cut comes right
// after every exit, and the output must still be whole.
func TestEnv_ConcurrentRunsLoseNoOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts local.Options
	}{
		{"Warm", local.Options{Confine: confine.Off()}},
		{"NoPrestart", local.Options{Confine: confine.Off(), NoPrestart: true}},
		{"TinyDrainDelay", local.Options{Confine: confine.Off(), DrainDelay: time.Nanosecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := open(t, tc.opts)
			const n, workers = 400, 50
			jobs := make(chan int)
			var mu sync.Mutex
			var bad []string
			warned := 0
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for i := range jobs {
						res, err := env.Run(t.Context(), envs.Command{Shell: testproc.PayloadCommand(i)})
						mu.Lock()
						switch {
						case err != nil:
							bad = append(bad, fmt.Sprintf("command %d: %v", i, err))
						case res.Code != 0 || res.Output != testproc.Payload(i):
							bad = append(bad, fmt.Sprintf("command %d: exit %d, %d bytes (want %d), warnings %q, first line %q",
								i, res.Code, len(res.Output), len(testproc.Payload(i)), res.Warnings, firstLine(res.Output)))
						case len(res.Warnings) > 0:
							warned++
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
			if len(bad) > 0 {
				t.Fatalf("%d of %d results wrong", len(bad), n)
			}
			t.Logf("%d of %d complete results carried a warning", warned, n)
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestRun_GrandchildHoldingOutput protects two promises at once: a
// process the command leaves running with its output open does not hold
// the call (DrainDelay after the exit, the output is cut), and the result
// says that its output was cut, while everything written before the cut
// is there. The control row sends the leftover's output elsewhere: the
// call is as quick and says nothing.
func TestRun_GrandchildHoldingOutput(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts local.Options
	}{
		{"Contained", local.Options{Confine: confine.Off()}},
		{"ContainedNoPrestart", local.Options{Confine: confine.Off(), NoPrestart: true}},
		{"KeepLeftovers", local.Options{Confine: confine.Off(), KeepLeftovers: true}},
	} {
		for _, tc := range []struct {
			name, leftover string
			cut            bool
		}{
			{"HoldsOutput", "sleep 1000.4713 &", true},
			{"Control", "sleep 1000.4713 >/dev/null 2>&1 &", false},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				env := open(t, mode.opts)
				start := time.Now()
				res := run(t, env, envs.Command{Shell: "echo before; " + tc.leftover + " echo after"})
				if took := time.Since(start); took > 30*time.Second {
					t.Fatalf("the call took %v: the leftover held it", took)
				}
				if res.Output != "before\nafter\n" || res.Code != 0 {
					t.Errorf("exit %d, output %q; want 0, %q", res.Code, res.Output, "before\nafter\n")
				}
				if got := slices.Contains(res.Warnings, local.OutputCutWarning); got != tc.cut {
					t.Errorf("warnings %q: output-cut warning %v; want %v", res.Warnings, got, tc.cut)
				}
			})
		}
	}
}
