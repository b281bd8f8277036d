package procregistry

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
)

// Reading by offsets gives every byte exactly once, across a follow that
// is cut off (a reconnect) and across a registry restart.
func TestLog_ReplayAcrossReconnectAndRestart(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	in := start(t, r, StartRequest{Shell: `for i in $(seq 1 3000); do echo "line $i"; done; read x; for i in $(seq 3001 6000); do echo "line $i"; done`, Lifetime: LifetimeDetached})
	var got bytes.Buffer
	// A follower that disconnects early.
	ctx, cancel := context.WithCancel(t.Context())
	w := &cutWriter{w: &got, after: 5000, cancel: cancel}
	off, err := r.Follow(ctx, in.ID, 0, w)
	if err == nil || off != int64(got.Len()) {
		t.Fatalf("cut follow: off %d, err %v, got %d bytes", off, err, got.Len())
	}
	// Reconnect: chunks from the offset until the first part is all there.
	testwait.Within(t, 10*time.Second, "first part", func() bool {
		c, err := r.ReadLog(in.ID, off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(c.Data)
		off = c.Next
		return strings.Contains(got.String(), "line 3000\n")
	})
	// Restart the registry while the job runs.
	r.Close()
	r = newTestRegistry(t, dir, nil)
	if err := r.Submit(t.Context(), in.ID, "go"); err != nil {
		t.Fatal(err)
	}
	next, err := r.Follow(t.Context(), in.ID, off, &got)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 6000; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got.String() != want.String() {
		t.Fatalf("replayed log differs: %d bytes, want %d", got.Len(), want.Len())
	}
	if next != int64(want.Len()) {
		t.Errorf("next = %d; want %d", next, want.Len())
	}
	c, _ := r.TailLines(in.ID, 2)
	if string(c.Data) != "line 5999\nline 6000\n" || !c.Done {
		t.Errorf("TailLines(2) = %q, done %v", c.Data, c.Done)
	}
	p, _ := r.Poll(in.ID)
	if !strings.HasSuffix(p.Preview, "line 6000\n") || len(p.Preview) > TailBytes {
		t.Errorf("preview = %d bytes ending %q", len(p.Preview), p.Preview[max(0, len(p.Preview)-20):])
	}
}

// cutWriter cancels once it holds `after` bytes, like a client that
// disconnects. It keeps every byte it accepted, so the follower's offset
// and the bytes received agree. (Cancelling only on a later Write would
// hang when all the output had already arrived in one or two writes.)
type cutWriter struct {
	w      *bytes.Buffer
	after  int
	cancel func()
}

func (c *cutWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.w.Len() >= c.after {
		c.cancel()
	}
	return n, err
}

// 1 GiB of output (64 MiB with -short) goes through a job whose output
// the registry follows line by line for a watch pattern, and the
// registry's memory stays bounded: the bytes go straight from the
// command into the log file.
func TestLog_GigabyteBoundedMemory(t *testing.T) {
	size := int64(1 << 30)
	if testing.Short() {
		size = 64 << 20
	}
	r := newTestRegistry(t, "", nil)
	runtime.GC()
	rss0 := rssKB(t)
	var peakHeap uint64
	var ms runtime.MemStats
	sh := "head -c " + strconv.FormatInt(size, 10) + " /dev/zero; echo; echo DONE"
	in := start(t, r, StartRequest{Shell: sh, Watch: []string{"^DONE$"}, Notify: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		waitDone(t, r, in.ID)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
		}
	}
	rss1 := rssKB(t)
	got, _ := r.Get(in.ID)
	if got.Size != size+6 {
		t.Errorf("log size = %d; want %d", got.Size, size+6)
	}
	ev := waitEvent(t, r, "agent", EventWatch)
	if ev.Line != "DONE" {
		t.Errorf("watch event = %+v", ev)
	}
	t.Logf("%d MiB: peak heap in use %.1f MiB, RSS %d -> %d KiB (VmHWM %d KiB)", size>>20, float64(peakHeap)/(1<<20), rss0, rss1, hwmKB(t))
	if peakHeap > 64<<20 {
		t.Errorf("peak heap %d MiB; want bounded (< 64 MiB)", peakHeap>>20)
	}
	if rss1-rss0 > 64<<10 {
		t.Errorf("RSS grew by %d KiB; want < 64 MiB", rss1-rss0)
	}
}

func rssKB(t *testing.T) int64 { return statusKB(t, "VmRSS:") }
func hwmKB(t *testing.T) int64 { return statusKB(t, "VmHWM:") }

func statusKB(t *testing.T, key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		integration.Skip(t, "no /proc: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}
