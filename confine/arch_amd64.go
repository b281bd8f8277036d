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

// legacyMetaCalls are the metadata calls of this ABI beyond the generic
// ones (metaCalls): arm64 has only the *at forms.
var legacyMetaCalls = map[uint32]metaShape{
	unix.SYS_CHMOD:     {op: opChmod, form: formPath},
	unix.SYS_CHOWN:     {op: opChown, form: formPath},
	unix.SYS_LCHOWN:    {op: opChown, form: formPath, nofollow: true},
	unix.SYS_UTIME:     {op: opUtimes, form: formPath, layout: utimbufTimes},
	unix.SYS_UTIMES:    {op: opUtimes, form: formPath, layout: timevalTimes},
	unix.SYS_FUTIMESAT: {op: opUtimes, form: formAt, layout: timevalTimes},
}
