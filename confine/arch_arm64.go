//go:build linux

package confine

import "golang.org/x/sys/unix"

// auditArch is the architecture the seccomp filter accepts; arm64 has no
// second system-call range (x32Base 0).
const (
	auditArch uint32 = unix.AUDIT_ARCH_AARCH64
	x32Base   uint32 = 0
)

// chmodCalls are the system calls that set a file's mode, with the index
// of their mode argument.
var chmodCalls = []struct{ nr, arg uint32 }{
	{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
}

// legacyMetaCalls: arm64 has only the generic *at forms (metaCalls).
var legacyMetaCalls = map[uint32]metaShape{}
