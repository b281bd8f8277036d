package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runbox/runbox/workspace"
)

// BenchmarkPush_10000Files measures a first push (one stream), an
// incremental push with one file changed (a scan that trusts the
// recorded hashes, then one small stream) and a comparison, on a tree of
// 10,000 files of 1 KiB in 100 directories, into a docker sandbox.
func BenchmarkPush_10000Files(b *testing.B) {
	dir := b.TempDir()
	content := make([]byte, 1024)
	for i := range 10000 {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content[0] = byte(i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := sandbox(b)
	var first, incr, cmp time.Duration
	round := 0
	for b.Loop() {
		round++
		o := workspace.Options{Task: "bench", Dir: dir, StateDir: filepath.Join(b.TempDir(), "state")}
		start := time.Now()
		rep, err := workspace.Push(b.Context(), env, o)
		first += time.Since(start)
		if err != nil || !rep.Full {
			b.Fatalf("first push: %v %+v", err, rep)
		}
		if err := os.WriteFile(filepath.Join(dir, "d00", "f00000.txt"), []byte(fmt.Sprint("changed ", round)), 0o644); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		rep, err = workspace.Push(b.Context(), env, o)
		incr += time.Since(start)
		if err != nil || rep.Full || len(rep.Sent) != 1 {
			b.Fatalf("incremental push: %v %+v", err, rep)
		}
		start = time.Now()
		c, err := workspace.Compare(b.Context(), env, o.StateDir, o.Task)
		cmp += time.Since(start)
		if err != nil || len(c.Changes) != 0 {
			b.Fatalf("compare: %v", err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "ms/first-push")
	b.ReportMetric(float64(incr.Milliseconds())/n, "ms/incremental-push")
	b.ReportMetric(float64(cmp.Milliseconds())/n, "ms/compare")
}
