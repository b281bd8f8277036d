//go:build !linux

package jobdir

import (
	"errors"
	"fmt"
	"net"

	"github.com/runbox/runbox/envs"
)

// Confinement: see confinement_linux.go. Elsewhere nothing is confined
// and no peer can be placed.
type Confinement struct {
	NoNewPrivs bool
	Seccomp    int
	Filters    int
	CapBnd     uint64
}

func (c Confinement) Beyond(base Confinement) bool { return false }
func (c Confinement) Layers(base Confinement) int  { return 0 }

func SelfConfinement() (Confinement, error) {
	return Confinement{}, fmt.Errorf("procregistry: confinement on this OS: %w", envs.ErrUnsupported)
}

type Peer struct {
	PID, UID    int
	Confinement Confinement
}

func PeerOf(net.Conn) (Peer, error) {
	return Peer{}, fmt.Errorf("procregistry: peer process on this OS: %w", envs.ErrUnsupported)
}

var ErrConfinedPeer = errors.New("procregistry: the peer is confined (a sandboxed command); this socket serves only unconfined callers")

func CheckUnconfinedPeer(c net.Conn) error { return CheckPeer(c) }
