//go:build linux

package confine_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/confine"
)

// socketCases are the system calls the seccomp filter decides on.
var socketCases = []struct {
	name               string
	domain, typ, proto int
	uring, pair        bool
	keyring            uintptr // a keyring call's number
	fsflags            bool    // chattr's ioctl on a file of the working directory
}{
	{name: "unix", domain: unix.AF_UNIX, typ: unix.SOCK_STREAM},
	{name: "unix-seqpacket", domain: unix.AF_UNIX, typ: unix.SOCK_SEQPACKET},
	{name: "unix-pair", domain: unix.AF_UNIX, typ: unix.SOCK_STREAM, pair: true},
	{name: "unixgram", domain: unix.AF_UNIX, typ: unix.SOCK_DGRAM},
	{name: "unixgram-flags", domain: unix.AF_UNIX, typ: unix.SOCK_DGRAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK},
	{name: "unixgram-pair", domain: unix.AF_UNIX, typ: unix.SOCK_DGRAM, pair: true},
	{name: "tcp", domain: unix.AF_INET, typ: unix.SOCK_STREAM},
	{name: "tcp-flags", domain: unix.AF_INET, typ: unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK},
	{name: "tcp6", domain: unix.AF_INET6, typ: unix.SOCK_STREAM, proto: unix.IPPROTO_TCP},
	{name: "udp", domain: unix.AF_INET, typ: unix.SOCK_DGRAM},
	{name: "udp-flags", domain: unix.AF_INET, typ: unix.SOCK_DGRAM | unix.SOCK_CLOEXEC},
	{name: "udp6", domain: unix.AF_INET6, typ: unix.SOCK_DGRAM},
	{name: "raw", domain: unix.AF_INET, typ: unix.SOCK_RAW, proto: unix.IPPROTO_ICMP},
	{name: "packet", domain: unix.AF_PACKET, typ: unix.SOCK_RAW},
	{name: "mptcp", domain: unix.AF_INET, typ: unix.SOCK_STREAM, proto: unix.IPPROTO_MPTCP},
	{name: "io_uring", uring: true},
	{name: "keyctl", keyring: unix.SYS_KEYCTL},
	{name: "add_key", keyring: unix.SYS_ADD_KEY},
	{name: "fsflags", fsflags: true},
}

// syscallProbe runs in the confined helper: it prints name=ok or
// name=ERRNO for each case.
func syscallProbe() int {
	for _, c := range socketCases {
		var err error
		if c.fsflags {
			// Its own flags set again: a change of nothing, which the
			// file system allows (or says it has no flags: ENOTTY).
			err = setOwnFlags()
		} else if c.keyring == unix.SYS_KEYCTL {
			// The user's keyring's id: what reading a key starts with.
			if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(unix.KEY_SPEC_USER_KEYRING&0xffffffff), 0); e != 0 {
				err = e
			}
		} else if c.keyring == unix.SYS_ADD_KEY {
			_, err = unix.AddKey("user", "runbox-seccomp-probe", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		} else if c.uring {
			var params [120]byte
			fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
			if e != 0 {
				err = e
			} else {
				unix.Close(int(fd))
			}
		} else if c.pair {
			var fds [2]int
			if fds, err = unix.Socketpair(c.domain, c.typ, c.proto); err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
		} else {
			var fd int
			if fd, err = unix.Socket(c.domain, c.typ, c.proto); err == nil {
				unix.Close(fd)
			}
		}
		res := "ok"
		var errno unix.Errno
		if errors.As(err, &errno) {
			res = unix.ErrnoName(errno)
		}
		fmt.Printf("%s=%s\n", c.name, res)
	}
	return 0
}

// setOwnFlags sets the flags of a new file in the working directory to
// what they are.
func setOwnFlags() error {
	f, err := os.CreateTemp(".", "fsflags-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}

// TestSeccomp_Sockets: as root (who could open every kind of socket
// unconfined, which the control run shows), the filter leaves only what
// the network mode allows; flags or'ed into the type change nothing.
func TestSeccomp_Sockets(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		if u.cred != nil {
			t.Skip("raw and packet sockets need root even unconfined")
		}
		allow := map[string]map[string]string{
			"profile-off": {},
			// raw and packet sockets need CAP_NET_RAW, which is gone.
			confine.NetworkOpen:      {"raw": "EPERM", "packet": "EPERM", "io_uring": "EPERM"},
			confine.NetworkAllowlist: {"udp": "EPERM", "udp-flags": "EPERM", "udp6": "EPERM", "raw": "EPERM", "packet": "EPERM", "mptcp": "EPROTONOSUPPORT", "io_uring": "EPERM"},
			confine.NetworkOff:       {"tcp": "EPERM", "tcp-flags": "EPERM", "tcp6": "EPERM", "udp": "EPERM", "udp-flags": "EPERM", "udp6": "EPERM", "raw": "EPERM", "packet": "EPERM", "mptcp": "EPERM", "io_uring": "EPERM"},
		}
		// No keyring and no file attributes under any mode; unconfined
		// (the control) they work.
		for mode, denied := range allow {
			if mode != "profile-off" {
				denied["keyctl"], denied["add_key"], denied["fsflags"] = "EPERM", "EPERM", "EPERM"
			}
		}
		// Unix datagram sockets go under every mode (their sends name
		// any receiver); stream and seqpacket ones stay.
		for mode, denied := range allow {
			if mode != "profile-off" {
				for _, c := range []string{"unixgram", "unixgram-flags", "unixgram-pair"} {
					denied[c] = "EACCES"
				}
			}
		}
		for mode, denied := range allow {
			t.Run(mode, func(t *testing.T) {
				f := newFixture(t, u)
				p := f.policy(confine.ProfileWorkspace)
				p.Network = mode
				if mode == "profile-off" {
					p = f.policy(confine.ProfileOff)
				}
				out, code := f.runArgv(t, p, f.exe, []string{helperSockets})
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, out)
				}
				for _, c := range socketCases {
					want := "ok"
					if d, ok := denied[c.name]; ok {
						want = d
					}
					line := c.name + "=" + want
					if !strings.Contains(out, line+"\n") {
						t.Errorf("want %s in:\n%s", line, out)
					}
				}
			})
		}
	})
}
