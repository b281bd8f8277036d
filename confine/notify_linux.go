package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock lets a command connect to the allowed TCP ports on every
// address, does not see unix sockets, and a server the command starts
// itself on loopback could be bound but not reached. The seccomp filter
// therefore hands every connect(2) and listen(2) to a listener this
// package serves (a seccomp user notification), outside the command's
// sandbox, under every network mode:
//
//   - listen: the socket is recorded as the command's own (its inode, read
//     through a duplicate taken with pidfd_getfd), and the call continues;
//   - connect: decided by the family of the socket itself (not of the
//     address, which the command chooses) and made here, on a duplicate
//     of the command's socket, with the address as read once; its result
//     is the command's. No connect is continued to the kernel: another
//     thread of the command could change the address, or the socket
//     behind the descriptor, between the decision and the kernel's own
//     reading.
//
// IPv4 and IPv6 under NetworkAllowlist:
//
//   - to an address that is not loopback (nor unspecified; a v4-mapped
//     address is its IPv4 one; an IPv6 address of 24 bytes, without
//     scope, as well as one of 28): refused with EACCES, whatever the port
//     (the session's proxy is the only way out, and allowed ports are
//     loopback services);
//   - to a loopback address on an allowed port (the proxy's, the policy's
//     AllowPorts), or on a port where every listening socket of the
//     command's network namespace is the command's own: made;
//   - to a loopback port nothing listens on: refused with ECONNREFUSED, as
//     without the sandbox (a command waiting for its own server to come up
//     retries on that, and may give up on EACCES);
//   - to any other loopback port: refused with EACCES.
//
// Under NetworkOpen they are made; under NetworkOff there are none. Unix
// sockets are decided in unixsock_linux.go.
//
// Whatever goes wrong on the way (the command's memory unreadable, /proc
// unreadable) refuses the connect. The programs of one start (a shell, a
// job, and all they start) share one listener and one set of sockets.

// Seccomp user-notification records (linux/seccomp.h).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// seccompIoctlNotifIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID: whether a
// notification's process is still waiting for its answer (its pid not
// reused).
const seccompIoctlNotifIDValid = 0x40082102

// notifier answers the notifications of one listener.
type notifier struct {
	fd      int
	rc      syscall.RawConn // fd in the runtime's poller; nil: waited for by a blocked thread
	network string          // the policy's network mode
	allowed map[uint16]bool // loopback ports the policy allows
	unix    unixRules       // which pathname unix sockets may be reached
	report  func(Violation) // nil: refusals are not reported
	callers callers         // who makes the metadata calls (metacreds_linux.go)

	mu    sync.Mutex
	owned map[uint64]bool // inodes of sockets the programs listened on

	sendMu sync.Mutex
	wg     sync.WaitGroup // connects made on a program's behalf, under way
	// pending counts those connects; running holds a place for each one
	// in a system call (a connect that waits holds a thread).
	pending atomic.Int64
	running chan struct{}
}

// serveListener answers the notifications of listener for the programs
// confined by p (whose unix-socket rules are rules) until no program uses its filter any more, then closes
// it. It owns listener. report (may be nil) is told of each connect
// refused. The listener waits in the runtime's poller, as a socket would:
// an idle sandbox holds no thread.
func serveListener(listener int, p Policy, rules unixRules, report func(Violation)) {
	n := &notifier{fd: listener, owned: map[uint64]bool{}, allowed: map[uint16]bool{}, report: report, network: p.network(), unix: rules, running: make(chan struct{}, maxConnecting)}
	for _, port := range p.connectPorts() {
		n.allowed[uint16(port)] = true
	}
	syncWakeUp(listener)
	if unix.SetNonblock(listener, true) == nil {
		f := os.NewFile(uintptr(listener), "seccomp-listener")
		defer f.Close()
		if rc, err := f.SyscallConn(); err == nil {
			n.rc = rc
		}
	} else {
		defer unix.Close(listener)
	}
	defer n.wg.Wait()
	defer n.callers.close()
	for {
		var req seccompNotif
		if err := n.recv(&req); err != nil {
			return
		}
		n.handle(&req)
	}
}

// syncWakeUp asks the kernel (Linux 6.6+) to wake the listener on the
// CPU of the program that made the call, which then waits for the
// answer: the two take turns, and a hand-off on one CPU costs far less
// than waking another, on a virtual machine above all. An older kernel
// refuses the flag and keeps the usual wake-up.
func syncWakeUp(listener int) {
	unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}

// recv waits for the next notification; io.EOF when every program of the
// filter has ended.
func (n *notifier) recv(req *seccompNotif) error {
	if n.rc != nil {
		var opErr error
		err := n.rc.Read(func(fd uintptr) bool {
			ready, err := n.take(req, 0)
			opErr = err
			return ready || err != nil
		})
		if err == nil {
			return opErr
		}
		n.rc = nil // not in the poller after all: wait blocked
	}
	for {
		if ready, err := n.take(req, -1); ready || err != nil {
			return err
		}
	}
}

// take receives a notification if one is pending within timeout
// milliseconds (-1: no bound): ready is false when none was.
func (n *notifier) take(req *seccompNotif, timeout int) (ready bool, err error) {
	pfd := []unix.PollFd{{Fd: int32(n.fd), Events: unix.POLLIN}}
	k, err := unix.Poll(pfd, timeout)
	switch {
	case err == unix.EINTR || k == 0:
		return false, nil
	case err != nil:
		return false, err
	case pfd[0].Revents&unix.POLLIN == 0:
		return false, io.EOF
	}
	*req = seccompNotif{}
	switch err := ioctlPtr(n.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(req)); err {
	case nil:
		return true, nil
	case unix.EINTR, unix.ENOENT, unix.EAGAIN: // the process went before its call was read
		return false, nil
	default:
		return false, err
	}
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// answer sends the result of a call: continue it as made (cont), or fail it
// with errno (0: it returns 0).
func (n *notifier) answer(id uint64, cont bool, errno unix.Errno) {
	resp := seccompNotifResp{ID: id}
	if cont {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else if errno != 0 {
		resp.Error = -int32(errno)
	}
	n.sendMu.Lock()
	defer n.sendMu.Unlock()
	// ENOENT: the process was interrupted or ended meanwhile.
	_ = ioctlPtr(n.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

func (n *notifier) valid(id uint64) bool {
	return ioctlPtr(n.fd, seccompIoctlNotifIDValid, unsafe.Pointer(&id)) == nil
}

func (n *notifier) handle(req *seccompNotif) {
	switch int(req.Nr) {
	case unix.SYS_LISTEN:
		n.noteListen(req)
		n.answer(req.ID, true, 0)
	case unix.SYS_CONNECT:
		n.connect(req)
	case unix.SYS_PTRACE:
		n.ptrace(req)
	case unix.SYS_OPEN_BY_HANDLE_AT:
		n.openByHandle(req)
	case unix.SYS_SOCKET, unix.SYS_SOCKETPAIR:
		n.unixDatagram(req)
	default:
		if s, ok := shapeOf(uint32(req.Nr)); ok {
			n.metadata(req, s)
			return
		}
		n.answer(req.ID, true, 0)
	}
}

// connect decides a connect and, when it is allowed, makes it here on a
// duplicate of the program's socket, with the address as read once:
// nothing is continued to the kernel, whose second reading of the
// address (and of the descriptor) another thread of the program could
// have changed after the decision.
func (n *notifier) connect(req *seccompNotif) {
	dup, err := n.socketOf(req, int(int32(req.Args[0])))
	if err != nil {
		n.answer(req.ID, false, errnoOf(err, unix.EBADF))
		return
	}
	dom, err := unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		unix.Close(dup)
		n.answer(req.ID, false, errnoOf(err, unix.ENOTSOCK))
		return
	}
	target, keep, errno := n.decide(req, dom)
	release := func() {
		unix.Close(dup)
		if keep >= 0 {
			unix.Close(keep)
		}
	}
	// A connect may wait (a full backlog): the next notification does
	// not. A program that makes thousands of such connects gets at most
	// maxConnecting of them in system calls at once (each holds a thread
	// of this process), the others waiting their turn, and past
	// maxPending the connect fails with EAGAIN, as with a full backlog.
	if errno == 0 && target != nil && n.pending.Add(1) > maxPending {
		n.pending.Add(-1)
		errno, target = unix.EAGAIN, nil
	}
	if errno != 0 || target == nil {
		release()
		n.answer(req.ID, false, errno)
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.pending.Add(-1)
		defer release()
		n.answer(req.ID, false, n.connectOn(dup, dom, target, req.ID))
	}()
}

// connectOn connects the program's socket dup (of family dom) to addr,
// for the notification id. A TCP socket the program made blocking waits in the
// runtime's poller, not in a thread, and is given up once the program
// that asked is gone; any other connect is made in a system call, at most
// maxConnecting at once.
func (n *notifier) connectOn(dup, dom int, addr []byte, id uint64) unix.Errno {
	flags, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
	if err != nil || (dom != unix.AF_INET && dom != unix.AF_INET6) || flags&unix.O_NONBLOCK != 0 || unix.SetNonblock(dup, true) != nil {
		n.running <- struct{}{}
		defer func() { <-n.running }()
		return connectRaw(dup, addr)
	}
	// The flag belongs to the socket, which the program shares: it is
	// blocking again before the program hears the answer.
	defer unix.SetNonblock(dup, false)
	if errno := connectRaw(dup, addr); errno != unix.EINPROGRESS {
		return errno
	}
	return n.awaitConnect(dup, id)
}

// awaitConnect waits for the connect under way on the non-blocking socket
// fd to end, and returns its result.
func (n *notifier) awaitConnect(fd int, id uint64) unix.Errno {
	d, err := unix.Dup(fd)
	if err != nil {
		return errnoOf(err, unix.EMFILE)
	}
	f := os.NewFile(uintptr(d), "connect") // in the poller: the socket is non-blocking
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return unix.EIO
	}
	for {
		f.SetWriteDeadline(time.Now().Add(time.Second))
		err := rc.Write(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			k, _ := unix.Poll(pfd, 0)
			return k > 0
		})
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || !n.valid(id) {
			return unix.EINTR // the program is gone: nobody hears it
		}
	}
	soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return errnoOf(err, unix.EIO)
	}
	return unix.Errno(soErr)
}

// Bounds of the connects made on the programs' behalf at once: in system
// calls (threads), and in all (goroutines).
const (
	maxConnecting = 64
	maxPending    = 4096
)

// decide returns the address to connect the program's socket (of family
// dom) to, and a descriptor that address needs open (-1: none), or the
// errno the connect fails with.
func (n *notifier) decide(req *seccompNotif, dom int) (target []byte, keep int, errno unix.Errno) {
	raw, errno := readAddr(int(req.Pid), uintptr(req.Args[1]), int(req.Args[2]))
	if errno != 0 {
		return nil, -1, errno
	}
	if !n.valid(req.ID) {
		return nil, -1, unix.EINTR // the caller is gone: the answer is lost
	}
	switch dom {
	case unix.AF_UNIX:
		return n.decideUnix(req, raw)
	case unix.AF_INET, unix.AF_INET6:
		target, errno := n.decideInet(req, raw)
		return target, -1, errno
	}
	return raw, -1, 0 // netlink: the address names no other program's service
}

// decideInet decides a connect of an IPv4 or IPv6 socket to raw.
func (n *notifier) decideInet(req *seccompNotif, raw []byte) ([]byte, unix.Errno) {
	switch n.network {
	case NetworkOpen:
		return raw, 0
	case NetworkOff:
		return nil, unix.EACCES // no such socket is made; one inherited goes nowhere
	}
	addr, port, err := inetAddr(raw)
	switch {
	case err == errNotLoopback:
		n.refused(addrString(addr), ruleNotLoopback)
		return nil, unix.EACCES
	case err != nil:
		// AF_UNSPEC (a disconnect) or a family the socket does not
		// take: the kernel's answer, for these bytes, reaches nothing.
		return raw, 0
	}
	if n.allowed[port] {
		return addr, 0
	}
	inodes, err := listeners(int(req.Pid), port)
	switch {
	case err != nil:
		return nil, unix.EACCES
	case len(inodes) == 0:
		// Nothing there to protect: refused as without the sandbox, so
		// that a command waiting for its own server to listen sees
		// what it expects.
		return nil, unix.ECONNREFUSED
	case !n.allOwned(inodes):
		n.refused(addrString(addr), rulePort)
		return nil, unix.EACCES
	}
	return addr, 0
}

// errnoOf is err's errno, or def when it has none.
func errnoOf(err error, def unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return def
}

// noteListen records the socket a program listens on as its own.
func (n *notifier) noteListen(req *seccompNotif) {
	dup, err := n.socketOf(req, int(int32(req.Args[0])))
	if err != nil {
		return
	}
	defer unix.Close(dup)
	var st unix.Stat_t
	if unix.Fstat(dup, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return
	}
	n.mu.Lock()
	n.owned[st.Ino] = true
	n.mu.Unlock()
}

// threadGroup is the process (thread group) of thread tid; tid itself
// when it cannot be read.
func threadGroup(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return pid
			}
		}
	}
	return tid
}

// socketOf duplicates descriptor fd of the notification's process, once
// sure the process is the one that made the call.
func (n *notifier) socketOf(req *seccompNotif, fd int) (int, error) {
	// The notification names the calling thread, which is not the
	// process's first one in a threaded program (Go, Java): a pidfd of
	// a thread needs PIDFD_THREAD (Linux 6.9); before that, the pidfd
	// is the thread group's, whose descriptors the threads share.
	pidfd, err := unix.PidfdOpen(int(req.Pid), pidfdThread)
	if err == unix.EINVAL {
		pidfd, err = unix.PidfdOpen(threadGroup(int(req.Pid)), 0)
	}
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	if !n.valid(req.ID) {
		return -1, unix.ENOENT
	}
	return unix.PidfdGetfd(pidfd, fd, 0)
}

// refused reports a refused connect to target.
func (n *notifier) refused(target, rule string) {
	if n.report == nil {
		return
	}
	n.report(Violation{Op: "connect", Target: target, Rule: rule})
}

// addrString is a raw IPv4 or IPv6 socket address as host:port.
func addrString(addr []byte) string {
	port := strconv.Itoa(int(binary.BigEndian.Uint16(addr[2:4])))
	if binary.LittleEndian.Uint16(addr) == unix.AF_INET {
		return net.JoinHostPort(net.IP(addr[4:8]).String(), port)
	}
	return net.JoinHostPort(net.IP(addr[8:24]).String(), port)
}

func (n *notifier) allOwned(inodes []uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ino := range inodes {
		if !n.owned[ino] {
			return false
		}
	}
	return true
}

// errNotLoopback: an IPv4 or IPv6 address that is neither loopback nor
// unspecified; errNotInet: not an IPv4 or IPv6 address.
var (
	errNotLoopback = errors.New("confine: not a loopback address")
	errNotInet     = errors.New("confine: not an IPv4 or IPv6 address")
)

// sockaddrStorage is the size of struct sockaddr_storage, the longest
// address the kernel reads.
const sockaddrStorage = 128

// readAddr reads the socket address of size bytes a process passed at
// ptr, as the kernel would take it (at most a sockaddr_storage).
func readAddr(pid int, ptr uintptr, size int) ([]byte, unix.Errno) {
	if size < 0 || size > sockaddrStorage {
		return nil, unix.EINVAL
	}
	if size == 0 {
		return []byte{}, 0
	}
	buf := make([]byte, size)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(size)}}
	remote := []unix.RemoteIovec{{Base: ptr, Len: size}}
	if got, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil || got != size {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// sin6LenRFC2133 is the shortest IPv6 socket address the kernel takes:
// one without sin6_scope_id.
const sin6LenRFC2133 = 24

// inetAddr returns raw (cut to what the kernel reads of it) with its port
// when it is an IPv4 or IPv6 loopback or unspecified address; a
// v4-mapped IPv6 address is its IPv4 address.
func inetAddr(raw []byte) ([]byte, uint16, error) {
	if len(raw) < 2 {
		return nil, 0, errNotInet
	}
	var ip net.IP
	switch binary.LittleEndian.Uint16(raw) {
	case unix.AF_INET:
		if len(raw) < unix.SizeofSockaddrInet4 {
			return nil, 0, errNotInet // the kernel refuses it (EINVAL)
		}
		raw = raw[:unix.SizeofSockaddrInet4]
		ip = net.IP(raw[4:8])
	case unix.AF_INET6:
		if len(raw) < sin6LenRFC2133 {
			return nil, 0, errNotInet // the kernel refuses it (EINVAL)
		}
		raw = raw[:min(len(raw), unix.SizeofSockaddrInet6)]
		ip = net.IP(raw[8:24])
	default:
		return nil, 0, errNotInet
	}
	port := binary.BigEndian.Uint16(raw[2:4])
	if !ip.IsLoopback() && !ip.IsUnspecified() {
		return raw, port, errNotLoopback
	}
	return raw, port, nil
}

// listeners lists the inodes of the TCP sockets listening on port, on any
// address, in the network namespace of process pid.
func listeners(pid int, port uint16) ([]uint64, error) {
	var inodes []uint64
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + table)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			const listen = "0A"
			if len(f) < 10 || f[3] != listen {
				continue
			}
			_, hex, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hex, 16, 16); err != nil || uint16(p) != port {
				continue
			}
			ino, err := strconv.ParseUint(f[9], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("confine: /proc/%d/net/%s: inode %q: %w", pid, table, f[9], err)
			}
			inodes = append(inodes, ino)
		}
	}
	return inodes, nil
}

// connectRaw connects socket fd to the raw socket address addr.
func connectRaw(fd int, addr []byte) unix.Errno {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(addr)))
	return e
}
