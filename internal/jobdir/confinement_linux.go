//go:build linux

package jobdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Confinement is what the kernel shows, in /proc/PID/status, of the
// sandbox a process runs in: attributes a process can take on but never
// shed. runbox's sandbox (package confine) sets no_new_privs, installs a
// seccomp filter and, for root, empties the capability bounding set; a
// process it confined carries all three for good, and so does everything
// it starts. A process that did none of it after the one it is compared
// with (see [Confinement.Beyond]) is not confined more than that one.
type Confinement struct {
	NoNewPrivs bool
	Seccomp    int    // 0 none, 1 strict, 2 filter
	Filters    int    // seccomp filters stacked (Seccomp_filters)
	CapBnd     uint64 // the capability bounding set
}

// Beyond reports whether c is confined beyond base: it set no_new_privs,
// stacked a seccomp filter or dropped a capability from its bounding set
// that base did not.
func (c Confinement) Beyond(base Confinement) bool {
	return (c.NoNewPrivs && !base.NoNewPrivs) || c.Seccomp > base.Seccomp ||
		c.Filters > base.Filters || base.CapBnd&^c.CapBnd != 0
}

// Layers is how many seccomp filters c has stacked beyond base.
func (c Confinement) Layers(base Confinement) int { return c.Filters - base.Filters }

func (c Confinement) String() string {
	return fmt.Sprintf("no_new_privs=%t seccomp=%d filters=%d capbnd=%#x", c.NoNewPrivs, c.Seccomp, c.Filters, c.CapBnd)
}

// ConfinementOf reads the confinement of process pid from /proc.
func ConfinementOf(pid int) (Confinement, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Confinement{}, fmt.Errorf("procregistry: confinement of process %d: %w", pid, err)
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (Confinement, error) {
	var c Confinement
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		var err error
		switch k {
		case "NoNewPrivs":
			c.NoNewPrivs, seen = v != "0", seen|1
		case "Seccomp":
			c.Seccomp, err = strconv.Atoi(v)
			seen |= 2
		case "Seccomp_filters":
			c.Filters, err = strconv.Atoi(v)
		case "CapBnd":
			c.CapBnd, err = strconv.ParseUint(v, 16, 64)
			seen |= 4
		}
		if err != nil {
			return Confinement{}, fmt.Errorf("procregistry: malformed status line %q", sc.Text())
		}
	}
	// A kernel that shows no Seccomp line has no seccomp: nothing runbox
	// confines runs there. Without NoNewPrivs or CapBnd nothing can be said.
	if seen&5 != 5 {
		return Confinement{}, errors.New("procregistry: /proc status shows no NoNewPrivs or CapBnd")
	}
	return c, nil
}

var self struct {
	once sync.Once
	c    Confinement
	err  error
}

// SelfConfinement is this process's confinement, read once: a process
// can only add to it, and what it adds (runbox's own processes add
// nothing) would make every peer look less confined, never more.
func SelfConfinement() (Confinement, error) {
	self.once.Do(func() { self.c, self.err = ConfinementOf(os.Getpid()) })
	return self.c, self.err
}

// soPeerPIDFD is SO_PEERPIDFD (Linux 6.5): a pidfd of the process that
// connected, which names that very process even once its PID is reused.
const soPeerPIDFD = 77

// Peer is the process at the other end of a Unix-socket connection, as
// the kernel recorded it when it connected.
type Peer struct {
	PID, UID    int
	Confinement Confinement
}

// PeerOf identifies c's peer and reads its confinement. The process is
// named by a pidfd where the kernel gives one (SO_PEERPIDFD), and is
// checked to be still alive once its status was read: a peer that exited
// meanwhile, whose PID could name another process by then, is an error,
// as is one whose status cannot be read.
func PeerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("procregistry: not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr == nil {
			if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPIDFD); err == nil {
				pidfd = pfd
			}
		}
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, cerr
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid)}
	if pidfd < 0 {
		// An older kernel: the PID as recorded at connect, opened now.
		if pidfd, err = unix.PidfdOpen(p.PID, 0); err != nil {
			return p, fmt.Errorf("procregistry: peer %d: %w", p.PID, err)
		}
	}
	defer unix.Close(pidfd)
	conf, err := ConfinementOf(p.PID)
	if err != nil {
		return p, err
	}
	// Readable means exited: the status read may be another process's.
	pfd := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 0); err != nil || n != 0 {
		return p, fmt.Errorf("procregistry: peer %d exited before its confinement was known", p.PID)
	}
	p.Confinement = conf
	return p, nil
}

// ErrConfinedPeer: the peer runs in a sandbox this process does not, and
// may not use this socket.
var ErrConfinedPeer = errors.New("procregistry: the peer is confined (a sandboxed command); this socket serves only unconfined callers")

// CheckUnconfinedPeer is CheckPeer for a socket that serves no sandboxed
// command: it also refuses a peer confined beyond this process (see
// [Confinement.Beyond]), and one whose confinement cannot be read.
func CheckUnconfinedPeer(c net.Conn) error {
	if err := CheckPeer(c); err != nil {
		return err
	}
	base, err := SelfConfinement()
	if err != nil {
		return err
	}
	p, err := PeerOf(c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfinedPeer, err)
	}
	if p.Confinement.Beyond(base) {
		return fmt.Errorf("%w: process %d (%v)", ErrConfinedPeer, p.PID, p.Confinement)
	}
	return nil
}
