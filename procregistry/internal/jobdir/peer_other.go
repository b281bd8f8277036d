//go:build !linux

package jobdir

import (
	"errors"
	"net"
)

// CheckPeer refuses every connection where the peer's credentials
// cannot be read.
func CheckPeer(net.Conn) error {
	return errors.New("procregistry: peer credentials are not available on this platform")
}
