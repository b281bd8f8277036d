package procregistry

import (
	"net"

	"github.com/runbox/runbox/procregistry/internal/jobdir"
)

// CheckPeer refuses a Unix-socket connection whose peer is another user
// (SO_PEERCRED), and every connection where the peer's credentials
// cannot be read (errors.Is envs.ErrUnsupported). The job daemon, the
// supervisors and runbox serve --socket all rely on it.
func CheckPeer(c net.Conn) error { return jobdir.CheckPeer(c) }
