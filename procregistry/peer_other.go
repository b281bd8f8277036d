//go:build !linux

package procregistry

import (
	"fmt"
	"net"

	"github.com/runbox/runbox/envs"
)

type peerProc struct {
	pid, ppid, pgid int
	start           uint64
}

type cgroupLine struct {
	controllers []string
	path        string
}

// peerPID fails: without SO_PEERCRED and /proc a peer cannot be placed,
// and a peer that cannot be placed is refused.
func peerPID(net.Conn) (int, error) {
	return 0, fmt.Errorf("procregistry: peer process on this OS: %w", envs.ErrUnsupported)
}

func ancestry(int) ([]peerProc, error) {
	return nil, fmt.Errorf("procregistry: process ancestry on this OS: %w", envs.ErrUnsupported)
}

func cgroupsOf(int) []cgroupLine { return nil }

func inContainer(int, []cgroupLine, string, map[string]string) bool { return false }

func readPeerStat(int) (peerProc, error) {
	return peerProc{}, fmt.Errorf("procregistry: process stat on this OS: %w", envs.ErrUnsupported)
}
