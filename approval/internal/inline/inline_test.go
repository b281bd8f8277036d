package inline

import (
	"strings"
	"testing"
)

func TestQuiet(t *testing.T) {
	if len(quietCases) < 40 || len(loudCases) < 60 {
		t.Fatalf("table too small: %d quiet, %d not", len(quietCases), len(loudCases))
	}
	for _, c := range append(append([]qcase{}, quietCases...), loudCases...) {
		ok, why := Quiet(c.lang, c.src)
		if ok != c.quiet {
			t.Errorf("Quiet(%d, %q) = %v, %q; want quiet=%v", c.lang, c.src, ok, why, c.quiet)
			continue
		}
		if ok != (why == "") {
			t.Errorf("Quiet(%d, %q): ok=%v but why=%q", c.lang, c.src, ok, why)
		}
		if c.why != "" && why != c.why {
			t.Errorf("Quiet(%d, %q) why = %q; want %q", c.lang, c.src, why, c.why)
		}
	}
}

func TestQuietLimits(t *testing.T) {
	big := strings.Repeat("x = 1\n", MaxSource/6+1)
	if ok, why := Quiet(Python, big); ok || why != unreadable {
		t.Errorf("oversized source: %v, %q", ok, why)
	}
	if ok, why := Quiet(Python, "print('\xff')"); ok || why != unreadable {
		t.Errorf("invalid UTF-8: %v, %q", ok, why)
	}
	if ok, _ := Quiet(Lang(9), "print(1)"); ok {
		t.Error("unknown language is quiet")
	}
}

func BenchmarkQuiet(b *testing.B) {
	all := append(append([]qcase{}, quietCases...), loudCases...)
	size := 0
	for _, c := range all {
		size += len(c.src)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range all {
			Quiet(c.lang, c.src)
		}
	}
}
