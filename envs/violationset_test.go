package envs_test

import (
	"strconv"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestViolationSet_BoundedUnderAttack: a command refused 150,000 distinct
// ways (a connect loop over ports) is listed by its first refusals and
// the rest counted; a refusal repeated is recorded once.
func TestViolationSet_BoundedUnderAttack(t *testing.T) {
	var s envs.ViolationSet
	for i := range 150000 {
		s.Add(envs.Violation{Op: "connect", Target: "10.0.0.1:" + strconv.Itoa(i), Rule: "not loopback"})
		s.Add(envs.Violation{Op: "connect", Target: "10.0.0.1:0", Rule: "not loopback"})
	}
	got := s.List()
	if len(got) != envs.MaxViolations+1 {
		t.Fatalf("%d listed; want %d", len(got), envs.MaxViolations+1)
	}
	if last := got[len(got)-1]; last.Op != envs.OpMore || last.Target != strconv.Itoa(150000-envs.MaxViolations)+" more" {
		t.Errorf("last entry %+v; want the %d others counted", last, 150000-envs.MaxViolations)
	}
}
