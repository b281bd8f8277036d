//go:build !linux

package supervisor

import (
	"time"

	"github.com/runbox/runbox/termination"
)

// waitGone returns once p, a process that is not this one's child, has
// exited, looking every second.
func waitGone(p termination.Proc) {
	for p.Alive() {
		time.Sleep(time.Second)
	}
}
