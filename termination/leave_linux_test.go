//go:build linux

package termination

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
)

// A process that left its command's container survives that command's
// teardown, container and all; without Leave the same process is killed
// (TestKillTree_ContainerCatchesDoubleFork).
func TestLeave_OutlivesTheCommandsTeardown(t *testing.T) {
	eachMechanism(t, func(t *testing.T, m Mechanism) {
		c := newTestContainer(t, m, envs.Limits{})
		s := start(t, spec{helper: "daemon", c: c})
		orphan := s.others[0]
		id := fmt.Sprintf("test-leave-%d", os.Getpid())
		in, err := Leave(t.Context(), orphan.PID, id)
		if err != nil || !in {
			t.Fatalf("Leave = %v, %v; want true, nil", in, err)
		}
		pids, err := c.Procs()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pids {
			if p == orphan.PID {
				t.Fatalf("%d still in the container after Leave: %v", p, pids)
			}
		}
		if err := KillTree(t.Context(), s.root, Options{Grace: shortGrace, Container: c}); err != nil {
			t.Fatalf("KillTree = %v", err)
		}
		s.wait(t)
		if !orphan.Alive() {
			t.Fatalf("%v died with the container it had left", orphan)
		}
		// Leaving again finds nothing: it is in no runbox container now
		// (its own scope excepted, which is runbox's too).
		if in, err := Leave(t.Context(), orphan.PID, id); m != SystemdScope && (in || err != nil) {
			t.Errorf("second Leave = %v, %v; want false, nil", in, err)
		}
		orphan.Signal(syscall.SIGKILL)
		testwait.Within(t, 10*time.Second, "the orphan gone after SIGKILL", func() bool { return !orphan.Alive() })
	})
}

func TestOutsideRunbox(t *testing.T) {
	for _, tc := range []struct {
		path, above string
		in          bool
	}{
		{"/", "/", false},
		{"/user.slice/session-3.scope", "/user.slice/session-3.scope", false},
		{"/runbox-12-1", "/", true},
		{"/docker/abc/runbox-12-1/runbox-job-x", "/docker/abc", true},
		{"/system.slice/runbox-12-1.scope", "/system.slice", true},
	} {
		above, in := outsideRunbox(tc.path)
		if above != tc.above || in != tc.in {
			t.Errorf("outsideRunbox(%q) = %q, %v; want %q, %v", tc.path, above, in, tc.above, tc.in)
		}
	}
}
