package confine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The trampoline becomes the program it starts, so it cannot serve the
// seccomp listener of that program (notify_linux.go) itself: it hands
// the listener to the process that started it, which serves it with a
// goroutine. The way back is a unix socket that process listens on, in
// the abstract namespace under a random name, given to the trampoline in
// its environment (ServerEnv; the trampoline removes it before the
// program runs). The trampoline connects before it confines itself
// (Landlock would refuse an abstract socket outside its domain), sends
// the listener once the filter is loaded, and closes the connection.

// ServerEnv names, in the trampoline's environment, the abstract unix
// socket to hand the listener over on.
const ServerEnv = "RUNBOX_CONFINE_SERVER"

// Handover serves, in this process, the seccomp listener of a program
// started through the trampoline (see [Argv]), which decides the
// program's connects: the loopback servers it starts itself and its
// allowed ports on loopback only, the unix sockets it may reach (see the
// package documentation, "Connects"). Without a Handover the trampoline
// confines the program all the same, Landlock alone decides its TCP
// connects (allowed ports on every address, its own servers on other
// ports unreachable), and unix sockets are not decided.
type Handover struct {
	fd     int // the listening socket
	name   string
	policy Policy
}

// NewHandover makes a Handover for a program confined by p; nil under
// ProfileOff.
func NewHandover(p Policy) (*Handover, error) {
	if p.Profile == ProfileOff {
		return nil, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("confine: handover name: %w", err)
	}
	name := "runbox-confine-" + hex.EncodeToString(b[:])
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: handover socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("confine: handover socket: %w", err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("confine: handover socket: %w", err)
	}
	return &Handover{fd: fd, name: name, policy: p}, nil
}

// Env is the entry to add to the trampoline's environment.
func (h *Handover) Env() string { return ServerEnv + "=" + h.name }

// Name names the handover in cmd's environment (this process's, when
// cmd.Env is nil), without changing the slice cmd.Env was built from.
func (h *Handover) Name(cmd *exec.Cmd) {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], h.Env())
}

// Serve takes the listener from the trampoline started as process pid
// (or as its child: a wrapper such as a subreaper may sit between) and
// serves it on a goroutine that ends when the program and everything it
// started have ended, or at once when pid ends without handing it over.
// Serve is called once, after the start; a Handover whose program did
// not start is closed instead. report, when not nil, is told of each
// connect the sandbox refuses the program, as [Prepared.Start]'s is.
func (h *Handover) Serve(pid int, report func(Violation)) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		h.Close()
		return
	}
	go func() {
		defer unix.Close(pidfd)
		listener, err := h.receive(pid, pidfd)
		h.Close()
		if err == nil {
			serveListener(listener, h.policy, newUnixRules(h.policy), report)
		}
	}()
}

// Close gives the handover up.
func (h *Handover) Close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

// receive waits for the trampoline's connection (while pid lives) and
// returns the listener it sends.
func (h *Handover) receive(pid, pidfd int) (int, error) {
	for {
		pfd := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}, {Fd: int32(pidfd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return -1, err
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			return -1, fmt.Errorf("confine: process %d ended before handing its listener over", pid)
		}
		conn, _, err := unix.Accept4(h.fd, unix.SOCK_CLOEXEC)
		if err != nil {
			continue
		}
		listener, err := receiveFrom(conn, pid)
		unix.Close(conn)
		if err == nil {
			return listener, nil
		}
	}
}

// receiveFrom reads the listener from conn, when its peer is pid or a
// child of pid.
func receiveFrom(conn, pid int) (int, error) {
	cred, err := unix.GetsockoptUcred(conn, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	if int(cred.Pid) != pid && parentOf(int(cred.Pid)) != pid {
		return -1, fmt.Errorf("confine: handover from process %d, not %d", cred.Pid, pid)
	}
	// The trampoline loads a filter that needs a listener only once
	// told it will be served.
	if _, err := unix.Write(conn, []byte{1}); err != nil {
		return -1, err
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("confine: no listener handed over (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("confine: no listener handed over (%v)", err)
	}
	return fds[0], nil
}

// parentOf is the parent of process pid (0 when unknown).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// handoverWait bounds the trampoline's wait for its server's word: a
// caller that made a Handover and never served it (a bug) leaves the
// program unserved, not hung.
const handoverWait = 60 * time.Second

// dialServer connects the trampoline to the handover named (ServerEnv),
// before it confines itself, and waits for the server's word that it
// will serve the listener; nil when there is no handover, or no word.
func dialServer(name string) *os.File {
	if name == "" {
		return nil
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	tv := unix.NsecToTimeval(handoverWait.Nanoseconds())
	if unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name}) != nil || unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil {
		unix.Close(fd)
		return nil
	}
	var word [1]byte
	if n, err := unix.Read(fd, word[:]); n != 1 || err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "listener-handover")
}

// handOver gives listener to the server and closes both.
func handOver(sock *os.File, listener int) error {
	defer sock.Close()
	defer unix.Close(listener)
	if err := unix.Sendmsg(int(sock.Fd()), []byte{1}, unix.UnixRights(listener), nil, 0); err != nil {
		return fmt.Errorf("confine: handing the listener over: %w", err)
	}
	return nil
}
