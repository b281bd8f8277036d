package bench

import (
	"regexp"
	"strings"
	"testing"
)

// TestPrintTable: a header with the RATIO column, one row a measurement,
// the ratio as 0.00x and "-" where there is no ratio or rate, so every
// row has every column.
func TestPrintTable(t *testing.T) {
	var out strings.Builder
	err := printTable(&out, []Measurement{
		{Name: "true", Backend: "local", N: 3, P50ms: 1.5, P99ms: 2, Baseline: "bash -c true", BaselineP50ms: 1, Ratio: 1.5},
		{Name: "gate.check", Backend: "approval", N: 10, P50ms: 0.005, P99ms: 0.01, Baseline: "shell parse only", BaselineP50ms: 0.001, Ratio: 5, PerSecond: 180000.4},
		{Name: "ssh-true", Backend: "ssh", Baseline: "ssh HOST true", Note: "no ssh host"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table = %q; want a header and 3 rows", out.String())
	}
	if !regexp.MustCompile(`^NAME\s+BACKEND\s+N\s+P50 ms\s+P99 ms\s+BASELINE\s+BASELINE P50 ms\s+RATIO\s+PER SECOND\s+NOTE$`).MatchString(lines[0]) {
		t.Errorf("header = %q", lines[0])
	}
	for i, re := range []string{
		`^true\s+local\s+3\s+1\.500\s+2\.000\s+bash -c true\s+1\.000\s+1\.50x\s+-\s*$`,
		`^gate\.check\s+approval\s+10\s+0\.005\s+0\.010\s+shell parse only\s+0\.001\s+5\.00x\s+180000\s*$`,
		`^ssh-true\s+ssh\s+0\s+0\.000\s+0\.000\s+ssh HOST true\s+0\.000\s+-\s+-\s+no ssh host$`,
	} {
		if !regexp.MustCompile(re).MatchString(lines[i+1]) {
			t.Errorf("row %d = %q; want it to match %s", i+1, lines[i+1], re)
		}
	}
}
