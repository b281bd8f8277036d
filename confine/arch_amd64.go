//go:build linux

package confine

import "golang.org/x/sys/unix"

// auditArch is the architecture the seccomp filter accepts; x32Base is
// the first x32 system-call number, refused.
const (
	auditArch uint32 = unix.AUDIT_ARCH_X86_64
	x32Base   uint32 = 0x40000000
)

// chmodCalls are the system calls that set a file's mode, with the index
// of their mode argument.
var chmodCalls = []struct{ nr, arg uint32 }{
	{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
}
