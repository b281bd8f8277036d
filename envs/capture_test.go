package envs_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
	gh, notice, gt := c.Window()
	if !bytes.Equal(got, slices.Concat(gh, notice, gt)) {
		t.Fatalf("Bytes %q is not Window's head+notice+tail", got)
	}
	// Each end may give up to 3 bytes to stay on a character boundary,
	// never more, and is still the start (end) of the stream.
	if len(gh) > head || len(gh) < head-3 || !bytes.Equal(gh, all[:len(gh)]) {
		t.Fatalf("head %q is not the stream's first %d bytes (less at most 3)", gh, head)
	}
	if len(gt) > tail || len(gt) < tail-3 || !bytes.Equal(gt, all[len(all)-len(gt):]) {
		t.Fatalf("tail %q is not the stream's last %d bytes (less at most 3)", gt, tail)
	}
	if !bytes.HasPrefix(notice, []byte("\n[runbox: output truncated: ")) || bytes.Count(notice, []byte("\n")) != 2 || !bytes.HasSuffix(notice, []byte("]\n")) {
		t.Fatalf("want exactly one notice line, got %q", notice)
	}
	omitted := fmt.Sprintf(" %d of %d bytes omitted", len(all)-len(gh)-len(gt), len(all))
	if !bytes.Contains(notice, []byte(omitted)) {
		t.Errorf("notice %q does not say%s", notice, omitted)
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
// chunking, including invalid UTF-8 and NUL bytes; and that a stream of
// valid UTF-8 gives a window of valid UTF-8, wherever the cuts fall.
func FuzzHeadTail(f *testing.F) {
	f.Add([]byte("hello world"), 5, uint8(3))
	f.Add([]byte("\xff\xfe\x00\x00abc\xc3("), 4, uint8(1))
	f.Add(bytes.Repeat([]byte("0123456789"), 50), 64, uint8(7))
	f.Add([]byte(strings.Repeat("é€😀", 40)), 33, uint8(5))
	f.Add([]byte("ab😀😀😀cd"), 7, uint8(2))
	f.Add([]byte(strings.Repeat("日本語", 10)), 11, uint8(0))
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
		if utf8.Valid(data) && !utf8.Valid(c.Bytes()) {
			t.Fatalf("valid UTF-8 in, window %q out is not valid UTF-8", c.Bytes())
		}
	})
}

// TestCapture_CutsOnCharacterBoundary: a limit that falls inside a
// multi-byte character at either end costs a few bytes of the window, not
// the whole window's validity as text (which --json would then have to
// send as base64).
func TestCapture_CutsOnCharacterBoundary(t *testing.T) {
	cases := []struct {
		name      string
		data      string
		limit     int
		head, end string
	}{
		// head is 4 bytes: "ab" + 2 of the 4 bytes of 😀 → "ab"
		{"head splits a 4-byte rune", "ab😀" + strings.Repeat("x", 20), 10, "ab", "xxxxxx"},
		// tail is the last 6 bytes: 2 continuation bytes of € + "abcd" → "abcd"
		{"tail starts mid-rune", strings.Repeat("y", 20) + "€abcd", 10, "yyyy", "abcd"},
		{"both", "é" + strings.Repeat("日", 30), 25, "é日日", "日日日日日"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := envs.NewCapture(tc.limit, t.TempDir())
			c.Write([]byte(tc.data))
			c.Close()
			head, _, tail := c.Window()
			if string(head) != tc.head || string(tail) != tc.end {
				t.Fatalf("Window(%q, %d) = head %q tail %q; want %q, %q", tc.data, tc.limit, head, tail, tc.head, tc.end)
			}
			if !utf8.Valid(c.Bytes()) {
				t.Fatalf("window %q is not valid UTF-8", c.Bytes())
			}
		})
	}
}
