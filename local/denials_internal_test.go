package local

import (
	"strconv"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// TestDenials_BoundedUnderAttack: a command refused 150,000 distinct ways
// (a connect loop over ports) is listed by its first refusals and the
// rest counted, so runbox's memory stays bounded; a refusal repeated is
// recorded once.
func TestDenials_BoundedUnderAttack(t *testing.T) {
	var d denials
	for i := range 150000 {
		d.add(confine.Violation{Op: "connect", Target: "10.0.0.1:" + strconv.Itoa(i), Rule: "not loopback"})
		d.add(confine.Violation{Op: "connect", Target: "10.0.0.1:0", Rule: "not loopback"})
	}
	got := d.list()
	if len(got) != maxDenials+1 || len(d.seen) != maxDenials {
		t.Fatalf("%d listed, %d remembered; want %d and %d", len(got), len(d.seen), maxDenials+1, maxDenials)
	}
	if last := got[len(got)-1]; last.Op != envs.OpMore || last.Target != strconv.Itoa(150000-maxDenials)+" more" {
		t.Errorf("last entry %+v; want the %d others counted", last, 150000-maxDenials)
	}
}
