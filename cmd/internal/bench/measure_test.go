package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestQuantile: nearest rank, in milliseconds, unrounded; the input is
// left in its order. Breaks if a fraction of a millisecond is rounded
// away (the gate's times are microseconds) or the rank is off by one.
func TestQuantile(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(float64(100 - i)) // 100 ms down to 1 ms
	}
	for _, tc := range []struct {
		name string
		d    []time.Duration
		q    float64
		want float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{ms(3)}, 0.99, 3},
		{"p50 of 1..100", hundred, 0.50, 50},
		{"p99 of 1..100", hundred, 0.99, 99},
		{"microseconds", []time.Duration{5 * time.Microsecond, 6 * time.Microsecond}, 0.5, 0.005},
		{"p0 is the smallest", hundred, 0, 1},
		{"p100 is the largest", hundred, 1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantile(tc.d, tc.q); got != tc.want {
				t.Errorf("quantile(%s, %v) = %v; want %v", tc.name, tc.q, got, tc.want)
			}
		})
	}
	if hundred[0] != ms(100) {
		t.Errorf("quantile sorted its input in place")
	}
}

// TestRatio: runbox's p50 over the baseline's, 0 (printed "-", omitted
// from JSON) when either side has no time.
func TestRatio(t *testing.T) {
	for _, tc := range []struct{ p50, base, want float64 }{
		{2, 1, 2}, {1, 4, 0.25}, {0, 1, 0}, {1, 0, 0}, {-1, 1, 0},
	} {
		if got := ratio(tc.p50, tc.base); got != tc.want {
			t.Errorf("ratio(%v, %v) = %v; want %v", tc.p50, tc.base, got, tc.want)
		}
	}
}

// TestInterleave_Order: one warm-up of each side, then the two sides
// alternate in runs of chunk, each timed n times. Breaks if one side
// runs all its times first, where a drift in the machine's load would
// weigh on one side only.
func TestInterleave_Order(t *testing.T) {
	var calls strings.Builder
	op := func(context.Context) error { calls.WriteByte('o'); return nil }
	base := func(context.Context) error { calls.WriteByte('b'); return nil }
	opT, baseT, err := interleave(t.Context(), op, base, 25)
	if err != nil {
		t.Fatal(err)
	}
	want := "ob" + strings.Repeat("o", 10) + strings.Repeat("b", 10) + strings.Repeat("o", 10) + strings.Repeat("b", 10) + strings.Repeat("o", 5) + strings.Repeat("b", 5)
	if calls.String() != want {
		t.Errorf("calls = %s; want %s", calls.String(), want)
	}
	if len(opT) != 25 || len(baseT) != 25 {
		t.Errorf("timed %d and %d runs; want 25 each", len(opT), len(baseT))
	}
}

// TestInterleave_BaselineErrorSaysSo: a failing baseline is reported as
// the baseline's, in the warm-up and in the timed runs alike, so that a
// note does not blame runbox for the docker or ssh client.
func TestInterleave_BaselineErrorSaysSo(t *testing.T) {
	boom := errors.New("boom")
	ok := func(context.Context) error { return nil }
	n := 0
	failsLater := func(context.Context) error {
		if n++; n > 3 {
			return boom
		}
		return nil
	}
	for name, base := range map[string]func(context.Context) error{
		"warm-up": func(context.Context) error { return boom },
		"timed":   failsLater,
	} {
		_, _, err := interleave(t.Context(), ok, base, 20)
		if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "baseline: ") {
			t.Errorf("%s: err = %v; want the baseline's boom", name, err)
		}
	}
	if _, _, err := interleave(t.Context(), func(context.Context) error { return boom }, ok, 20); !errors.Is(err, boom) || strings.HasPrefix(err.Error(), "baseline") {
		t.Errorf("a failing operation: err = %v; want boom, not the baseline's", err)
	}
}

// TestTimeN_StopsWhenCtxEnds: a cancelled run stops before the next
// operation, so Ctrl-C does not wait for the remaining runs.
func TestTimeN_StopsWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	runs := 0
	_, err := timeN(ctx, func(context.Context) error {
		if runs++; runs == 3 {
			cancel()
		}
		return nil
	}, 100)
	if !errors.Is(err, context.Canceled) || runs != 3 {
		t.Errorf("timeN after cancel: %d runs, err %v; want 3 runs and context.Canceled", runs, err)
	}
}

// TestCaseParams: the options win over a case's defaults, and maxN caps
// both (an expensive case stays bounded under a large -n).
func TestCaseParams(t *testing.T) {
	c := caseDef{n: 5, maxN: 20, scale: 7}
	for _, tc := range []struct {
		o            Options
		wantN, wantS int
	}{
		{Options{}, 5, 7},
		{Options{N: 9, Scale: 100}, 9, 100},
		{Options{N: 1000}, 20, 7},
	} {
		p := c.params(tc.o, "run", &progress{})
		if p.n != tc.wantN || p.scale != tc.wantS || p.run != "run" || p.progress == nil {
			t.Errorf("params(%+v) = %+v; want n %d, scale %d", tc.o, p, tc.wantN, tc.wantS)
		}
	}
	if p := (caseDef{n: 300}).params(Options{N: 1000}, "", &progress{}); p.n != 1000 {
		t.Errorf("uncapped case: n = %d; want 1000", p.n)
	}
}
