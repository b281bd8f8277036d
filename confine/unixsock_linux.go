package confine

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A confined program's connect to a unix socket is decided here (see
// notify_linux.go): Landlock does not police it before ABI 9, and a
// daemon that acts for its callers — a container engine, D-Bus, systemd,
// runbox's own — would act outside the sandbox.
//
//   - A pathname socket is resolved as the kernel would resolve it for
//     the program (its working directory or its root, every link
//     followed, no /proc magic link), to the socket's inode; the program
//     may reach it when that inode lies in a writable root of the policy
//     (its workspace, its TMPDIR: what it can make there it may use)
//     outside the deny list, or is one of Policy.UnixSockets. The connect
//     is then made here through the resolved inode, never through the
//     name again: a link swapped after the decision changes nothing.
//   - An abstract socket may be reached when it is served by the
//     program's own listening socket, as Landlock's scope allows.
//   - Anything else fails with EACCES, reported as a violation naming the
//     socket.
//
// The connect is made by this process, which runs as the same user as
// the program: the daemon sees this process's pid, not the program's.

// Rules of the unix-socket refusals, for violations.
const (
	ruleUnixSocket   = "unix socket outside the command's writable directories (sandbox.unix_sockets lists the ones it may use)"
	ruleUnixAbstract = "abstract unix socket the command does not serve"
	ruleUnixDatagram = "unix datagram sockets are not available in the sandbox: each datagram names its receiver, past runbox's decisions (stream sockets work)"
)

// unixDatagram answers the filter's notification of a socket(2) or
// socketpair(2) of an AF_UNIX datagram socket (seccomp_linux.go): it is
// refused and reported. The arguments are registers, which the kernel
// would use as read here: a call that is not one (the filter sends no
// other) goes on.
func (n *notifier) unixDatagram(req *seccompNotif) {
	if int(int32(req.Args[0])) != unix.AF_UNIX || int(int32(req.Args[1]))&0xf != unix.SOCK_DGRAM {
		n.answer(req.ID, true, 0)
		return
	}
	if n.report != nil {
		n.report(Violation{Op: "socket", Target: "unix datagram socket", Rule: ruleUnixDatagram})
	}
	n.answer(req.ID, false, unix.EACCES)
}

// sizeofSockaddrUnix is sizeof(struct sockaddr_un).
const sizeofSockaddrUnix = 110

// unixRules are the pathname sockets a policy lets a program reach.
type unixRules struct {
	writable []string // roots whose sockets the program may reach
	deny     []string // but not under these
	sockets  []string // and these sockets wherever they are
}

// newUnixRules builds p's rules, with every path's links resolved as they
// are now (a root the policy names through a link is where it leads).
func newUnixRules(p Policy) unixRules {
	var r unixRules
	roots := p.Writable
	if p.Profile == ProfileWorkspace {
		roots = append([]string{p.Workspace}, roots...)
	}
	for _, d := range roots {
		r.writable = append(r.writable, resolved(d))
	}
	for _, d := range p.DenyRead {
		r.deny = append(r.deny, resolved(d))
	}
	r.sockets = p.UnixSockets
	return r
}

// resolved is path with its links resolved, or cleaned when it cannot be.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// allows reports whether the socket at real (its resolved path, st its
// status) may be reached.
func (r unixRules) allows(real string, st *unix.Stat_t) bool {
	for _, s := range r.sockets {
		var ss unix.Stat_t
		if unix.Stat(s, &ss) == nil && ss.Dev == st.Dev && ss.Ino == st.Ino {
			return true
		}
	}
	return r.writes(real)
}

// writes reports whether real (a resolved path) lies in a writable root
// and outside the deny list: as for files, the more specific of a
// writable and a denied root that both hold it decides.
func (r unixRules) writes(real string) bool {
	w := deepest(real, r.writable)
	return w >= 0 && w > deepest(real, r.deny)
}

// decideUnix decides a connect of a unix socket to raw: the address to
// connect to and the descriptor it names (to close after), or an errno.
func (n *notifier) decideUnix(req *seccompNotif, raw []byte) ([]byte, int, unix.Errno) {
	if len(raw) >= 2 && binary.LittleEndian.Uint16(raw) == unix.AF_UNSPEC {
		return raw, -1, 0 // a datagram socket's disconnect
	}
	if len(raw) <= 2 || len(raw) > sizeofSockaddrUnix || binary.LittleEndian.Uint16(raw) != unix.AF_UNIX {
		return nil, -1, unix.EINVAL
	}
	name := raw[2:]
	if name[0] == 0 {
		return n.decideAbstract(req, raw)
	}
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	path := string(name)
	fd, errno := openAs(int(req.Pid), path)
	if errno != 0 {
		return nil, -1, errno
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, -1, errnoOf(err, unix.EACCES)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, -1, unix.ECONNREFUSED // as the kernel answers
	}
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := os.Readlink(self)
	if err != nil || !n.unix.allows(real, &st) {
		unix.Close(fd)
		if err == nil {
			path = real
		}
		n.refused(path, ruleUnixSocket)
		return nil, -1, unix.EACCES
	}
	return sockaddrUnix(self), fd, 0
}

// openAs opens path as process pid would resolve it (relative to its
// working directory, or, absolute, to its root), as an O_PATH descriptor
// of the file itself, refusing /proc's magic links (which this process
// would resolve as its own).
func openAs(pid int, path string) (int, unix.Errno) {
	base, how := "cwd", unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	if strings.HasPrefix(path, "/") {
		base, how.Resolve = "root", how.Resolve|unix.RESOLVE_IN_ROOT
	}
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/"+base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.EACCES
	}
	defer unix.Close(dir)
	return openat2(dir, path, &how, unix.EACCES)
}

// openat2 opens path from dir as how says, again when a rename elsewhere
// raced the lookup; an error that is no errno is fallback.
func openat2(dir int, path string, how *unix.OpenHow, fallback unix.Errno) (int, unix.Errno) {
	for {
		fd, err := unix.Openat2(dir, path, how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, errnoOf(err, fallback)
		}
		return fd, 0
	}
}

// sockaddrUnix is the raw sockaddr_un of path.
func sockaddrUnix(path string) []byte {
	b := make([]byte, 2, 2+len(path)+1)
	binary.LittleEndian.PutUint16(b, unix.AF_UNIX)
	b = append(b, path...)
	return append(b, 0)
}

// decideAbstract decides a connect to the abstract socket in raw: only
// one the programs listen on themselves.
func (n *notifier) decideAbstract(req *seccompNotif, raw []byte) ([]byte, int, unix.Errno) {
	shown := "@" + strings.ReplaceAll(string(raw[3:]), "\x00", "@")
	inodes, err := abstractListeners(int(req.Pid), shown)
	switch {
	case err != nil:
		return nil, -1, unix.EACCES
	case len(inodes) == 0:
		return nil, -1, unix.ECONNREFUSED // nothing listens there
	case !n.allOwned(inodes):
		n.refused(shown, ruleUnixAbstract)
		return nil, -1, unix.EACCES
	}
	return raw, -1, 0
}

// abstractListeners lists the inodes of the unix sockets of process
// pid's network namespace bound to the abstract name shown (as
// /proc/net/unix shows it: "@" and the name, NULs as "@").
func abstractListeners(pid int, shown string) ([]uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/unix")
	if err != nil {
		return nil, err
	}
	var inodes []uint64
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) < 8 || strings.Join(f[7:], " ") != shown {
			continue
		}
		if ino, err := strconv.ParseUint(f[6], 10, 64); err == nil {
			inodes = append(inodes, ino)
		}
	}
	return inodes, nil
}
