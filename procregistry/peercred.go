package procregistry

import (
	"net"

	"github.com/runbox/runbox/internal/jobdir"
)

// CheckPeer refuses a Unix-socket connection whose peer is another user
// (SO_PEERCRED), and every connection where the peer's credentials
// cannot be read (errors.Is envs.ErrUnsupported). The job daemon, the
// supervisors and runbox serve --socket all rely on it.
func CheckPeer(c net.Conn) error { return jobdir.CheckPeer(c) }

// CheckUnconfinedPeer is CheckPeer for a socket that must serve no
// sandboxed command: it also refuses (errors.Is [ErrConfinedPeer]) a peer
// the kernel shows confined beyond this process (no_new_privs, a seccomp
// filter or capabilities dropped that this process has not), and one
// whose confinement cannot be read. runbox serve --socket relies on it, as
// do the supervisors' sockets.
func CheckUnconfinedPeer(c net.Conn) error { return jobdir.CheckUnconfinedPeer(c) }

// ErrConfinedPeer: see [CheckUnconfinedPeer].
var ErrConfinedPeer = jobdir.ErrConfinedPeer
