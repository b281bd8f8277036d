package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpill_BoundedWhateverTheCommandPrints: a command that prints far
// more than the configured spill bound (spill_max) leaves a spill file of
// that bound, not of its output, and the result says where the spill
// stopped; the control below the bound keeps the whole output.
func TestSpill_BoundedWhateverTheCommandPrints(t *testing.T) {
	u := users(t)[0]
	home := u.home(t)
	cfg := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(cfg, []byte("spill_max: 1M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state"), "RUNBOX_CONFIG=" + cfg, "TMPDIR=" + t.TempDir()}
	for _, tc := range []struct {
		name  string
		bytes string
		size  int64
		bound bool
	}{
		{"control", "500000", 500000, false},
		{"flood", "20000000", 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := u.run(t, env, "run", "--json", "--", "head -c "+tc.bytes+" /dev/zero | tr '\\0' x")
			var r struct {
				Output    string `json:"output"`
				SpillPath string `json:"spill_path"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.SpillPath == "" {
				t.Fatalf("run: exit %d, %v, stderr %q, result %.300s", code, err, errOut, out)
			}
			defer os.Remove(r.SpillPath)
			fi, err := os.Stat(r.SpillPath)
			if err != nil || fi.Size() != tc.size {
				t.Fatalf("spill file %s: %v, %v; want %d bytes", r.SpillPath, fi, err, tc.size)
			}
			if strings.Contains(r.Output, "the spill file's bound") != tc.bound {
				t.Errorf("output does not say where the spill stopped (want it said: %v): %.500s", tc.bound, r.Output)
			}
		})
	}
}
