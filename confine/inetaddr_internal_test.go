//go:build linux

package confine

import (
	"encoding/binary"
	"net"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelPeer is the kernel's reading of the socket address raw for a
// socket of family: it connects a UDP socket (which sends nothing) and
// returns the peer the kernel set, or ok false when it refused the
// address.
func kernelPeer(t *testing.T, family int, raw []byte) (ip net.IP, port uint16, ok bool) {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no UDP socket of family %d: %v", family, err)
	}
	defer unix.Close(fd)
	var p unsafe.Pointer
	if len(raw) > 0 {
		p = unsafe.Pointer(&raw[0])
	}
	if _, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(raw))); e != 0 {
		return nil, 0, false
	}
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return nil, 0, false // AF_UNSPEC: disconnected, no peer
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.IP(a.Addr[:]), uint16(a.Port), true
	case *unix.SockaddrInet6:
		return net.IP(a.Addr[:]), uint16(a.Port), true
	}
	return nil, 0, false
}

// FuzzInetAddr_AsTheKernelReadsIt holds runbox's reading of a connect's
// address to the kernel's, for every length and family: whenever the
// kernel would connect a socket to an address that is not loopback (nor
// unspecified), runbox refuses it, and whenever runbox lets an address
// through as loopback, the kernel reads the same port on a loopback
// address. The 24-byte IPv6 address (no scope id) and v4-mapped ones are
// in the seeds: both once slipped past.
func FuzzInetAddr_AsTheKernelReadsIt(f *testing.F) {
	v6 := func(ip string, port uint16, size int) []byte {
		b := make([]byte, 28)
		binary.LittleEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[8:24], net.ParseIP(ip).To16())
		return b[:size]
	}
	v4 := func(ip string, port uint16) []byte {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[4:8], net.ParseIP(ip).To4())
		return b
	}
	f.Add(true, v6("::ffff:10.9.9.9", 443, 24))
	f.Add(true, v6("::ffff:10.9.9.9", 443, 28))
	f.Add(true, v6("::1", 8080, 24))
	f.Add(true, v6("2001:db8::1", 80, 28))
	f.Add(true, v6("::ffff:127.0.0.1", 80, 28))
	f.Add(true, v6("::", 80, 23))
	f.Add(false, v4("10.9.9.9", 443))
	f.Add(false, v4("127.0.0.2", 22))
	f.Add(false, v4("0.0.0.0", 22))
	f.Add(false, []byte{0, 0})
	f.Fuzz(func(t *testing.T, six bool, raw []byte) {
		if len(raw) > sockaddrStorage {
			return // the kernel refuses it before reading (EINVAL)
		}
		family := unix.AF_INET
		if six {
			family = unix.AF_INET6
		}
		ip, port, connects := kernelPeer(t, family, raw)
		_, gotPort, err := inetAddr(raw)
		switch {
		case !connects:
			// The kernel refuses these bytes: whatever runbox passes
			// on of them, the connect it makes fails the same way.
		case !ip.IsLoopback() && !ip.IsUnspecified():
			if err != errNotLoopback {
				t.Fatalf("the kernel connects to %s port %d; runbox reads %v (want refused as not loopback)", ip, port, err)
			}
		case err == nil && gotPort != port:
			t.Fatalf("the kernel connects to %s port %d; runbox reads port %d", ip, port, gotPort)
		case err == errNotLoopback:
			t.Fatalf("the kernel connects to loopback %s; runbox refuses it as not loopback", ip)
		}
	})
}
