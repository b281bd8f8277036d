//go:build !linux

package jobdir

import (
	"fmt"
	"net"

	"github.com/runbox/runbox/envs"
)

// CheckPeer refuses every connection: without SO_PEERCRED the peer's uid
// cannot be checked, and an unchecked socket would serve anyone.
func CheckPeer(net.Conn) error {
	return fmt.Errorf("procregistry: peer credentials on this OS: %w", envs.ErrUnsupported)
}
