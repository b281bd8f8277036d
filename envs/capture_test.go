package envs_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestCapture_Window protects the output contract: under the limit nothing
// is cut and nothing spills; over it, 40% head + 60% tail + one notice, and
// the spill file holds every byte.
func TestCapture_Window(t *testing.T) {
	cases := []struct {
		name   string
		limit  int
		chunks []string
	}{
		{"empty", 10, nil},
		{"fits", 10, []string{"0123456789"}},
		{"one over", 10, []string{"0123456789a"}},
		{"many small", 10, strings.Split("abcdefghijklmnopqrstuvwxyz", "")},
		{"one big", 10, []string{strings.Repeat("z", 1000) + "END"}},
		{"zero limit", 0, []string{"abc"}},
		{"unbounded", -1, []string{strings.Repeat("q", 100000)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := envs.NewCapture(tc.limit, t.TempDir())
			var all bytes.Buffer
			for _, ch := range tc.chunks {
				c.Write([]byte(ch))
				all.WriteString(ch)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			checkWindow(t, c, tc.limit, all.Bytes())
		})
	}
}

func checkWindow(t *testing.T, c *envs.Capture, limit int, all []byte) {
	t.Helper()
	if c.Total() != int64(len(all)) {
		t.Fatalf("Total = %d; want %d", c.Total(), len(all))
	}
	got := c.Bytes()
	if limit < 0 || len(all) <= limit {
		if !bytes.Equal(got, all) || c.Truncated() || c.SpillPath() != "" {
			t.Fatalf("stream that fits: Bytes = %q truncated=%v spill=%q; want it whole", got, c.Truncated(), c.SpillPath())
		}
		return
	}
	head, tail := limit*2/5, limit-limit*2/5
	if !c.Truncated() {
		t.Fatalf("Truncated = false for %d bytes over a limit of %d", len(all), limit)
	}
	if !bytes.HasPrefix(got, all[:head]) || !bytes.HasSuffix(got, all[len(all)-tail:]) {
		t.Fatalf("window %q lost its head %q or tail %q", got, all[:head], all[len(all)-tail:])
	}
	mid := got[head : len(got)-tail]
	if bytes.Count(mid, []byte("\n[runbox: output truncated")) != 1 {
		t.Fatalf("want exactly one notice, middle is %q", mid)
	}
	spilled, err := os.ReadFile(c.SpillPath())
	if err != nil {
		t.Fatalf("read spill: %v", err)
	}
	if !bytes.Equal(spilled, all) {
		t.Fatalf("spill file has %d bytes; want the whole %d-byte stream", len(spilled), len(all))
	}
	if fi, _ := os.Stat(c.SpillPath()); fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode = %v; want 0600", fi.Mode().Perm())
	}
}

// FuzzHeadTail checks the window invariants for any stream, limit and
// chunking, including invalid UTF-8 and NUL bytes.
func FuzzHeadTail(f *testing.F) {
	f.Add([]byte("hello world"), 5, uint8(3))
	f.Add([]byte("\xff\xfe\x00\x00abc\xc3("), 4, uint8(1))
	f.Add(bytes.Repeat([]byte("0123456789"), 50), 64, uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, limit int, chunk uint8) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		step := int(chunk) + 1
		c := envs.NewCapture(limit, t.TempDir())
		for i := 0; i < len(data); i += step {
			c.Write(data[i:min(i+step, len(data))])
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		checkWindow(t, c, limit, data)
	})
}
