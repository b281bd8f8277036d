package jobtest

import (
	"fmt"
	"testing"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// testTreeKill: a kill ends the job's whole tree, a child that left the
// job's process group and session (setsid) included, and the job is
// recorded as killed. What would break: a backend that signals the job's
// process group only (the setsid child runs on), or one whose relay
// returns before the tree is gone.
func testTreeKill(t *testing.T, x *session) {
	c := bounded(t)
	child, shell := marker(), marker()
	in := x.start(t, procregistry.StartRequest{
		Shell: fmt.Sprintf("setsid sh -c 'sleep 300; : %s' & sleep 300; : %s", child, shell),
	})
	// The control: both are seen from outside before the kill.
	testwait.Within(t, hang, "the job's shell running", func() bool { return x.running(t, shell) })
	testwait.Within(t, hang, "its setsid child running", func() bool { return x.running(t, child) })
	res, err := x.Jobs.Kill(c, in.ID)
	if err != nil || res.Outcome != procregistry.KillKilled {
		t.Fatalf("Kill = %+v, %v; want killed", res, err)
	}
	testwait.Within(t, hang, "the job's shell gone", func() bool { return !x.running(t, shell) })
	testwait.Within(t, hang, "its setsid child gone", func() bool { return !x.running(t, child) })
	if end := x.wait(t, in.ID); end.Status != procregistry.StatusKilled {
		t.Errorf("the killed job's status = %s; want killed", end.Status)
	}
}
