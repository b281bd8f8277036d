//go:build !linux

package server

import (
	"fmt"
	"net"

	"github.com/runbox/runbox/envs"
)

// checkPeer refuses every connection: without SO_PEERCRED the peer's uid
// cannot be checked, and an unchecked socket would serve anyone.
func checkPeer(net.Conn) error {
	return fmt.Errorf("server: peer credentials on this OS: %w", envs.ErrUnsupported)
}
