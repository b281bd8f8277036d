package envs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// TestCapture_SpillBounded: a stream that outgrows the spill file's bound
// fills the file up to it and no further, and the window says where the
// spill stopped; below the bound the spill holds the whole stream.
func TestCapture_SpillBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int64
		n        int
		wantSize int64
		cut      bool
	}{
		{"within", 1 << 20, 5000, 5000, false},
		{"beyond", 1000, 50000, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := envs.NewCapture(100, t.TempDir())
			c.SetSpillMax(tc.max)
			chunk := bytes.Repeat([]byte("x"), 333)
			for w := 0; w < tc.n; w += len(chunk) {
				c.Write(chunk[:min(len(chunk), tc.n-w)])
			}
			fi, err := os.Stat(c.SpillPath())
			if err != nil || fi.Size() != tc.wantSize {
				t.Fatalf("spill file: %v, %v; want %d bytes", fi, err, tc.wantSize)
			}
			_, notice, _ := c.Window()
			if strings.Contains(string(notice), "bound") != tc.cut {
				t.Errorf("notice %q; want the bound said: %v", notice, tc.cut)
			}
		})
	}
}

// TestBoundSpills_OldestGoFirst: spill files past the directory's bound
// are removed oldest first, the one being written never, and other files
// are left alone.
func TestBoundSpills_OldestGoFirst(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i, name := range []string{"runbox-output-1.log", "runbox-output-2.log", "runbox-output-3.log", "notes.txt"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, bytes.Repeat([]byte("x"), 100), 0o600)
		os.Chtimes(p, now.Add(time.Duration(i)*time.Minute), now.Add(time.Duration(i)*time.Minute))
	}
	keep := filepath.Join(dir, "runbox-output-1.log") // the oldest, being written
	if n := envs.BoundSpills(dir, 250, keep); n != 1 {
		t.Errorf("removed %d; want 1", n)
	}
	for name, want := range map[string]bool{"runbox-output-1.log": true, "runbox-output-2.log": false, "runbox-output-3.log": true, "notes.txt": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s present: %v; want %v", name, err == nil, want)
		}
	}
}
