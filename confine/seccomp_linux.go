package confine

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is written by hand: it is short, and every jump in it
// is a security decision worth reading. It checks, in order:
//
//  1. the architecture: a system call made through another ABI (i386 on
//     amd64, whose socketcall would hide the socket family) fails;
//  2. on amd64, the x32 system-call range fails for the same reason;
//  3. io_uring_setup, io_uring_enter and io_uring_register fail: io_uring
//     performs socket and file operations that seccomp never sees;
//  4. socket(2) and socketpair(2) of an AF_UNIX datagram socket fail with
//     EACCES, under every network mode (with a listener, which reports
//     the refusal, after its notification): a datagram names its
//     receiver in sendto's or sendmsg's address, the latter in memory
//     that seccomp cannot read and the program may change after any
//     check, so that no decision could hold; a stream or seqpacket
//     socket reaches a daemon only by connect, which is decided (9);
//  5. socket(2): AF_UNIX and AF_NETLINK are allowed; AF_INET and AF_INET6
//     are refused under NetworkOff, and under NetworkAllowlist allowed only
//     as plain TCP streams (the type masked with 0xf, because
//     SOCK_CLOEXEC and SOCK_NONBLOCK are or'ed into it; the protocol 0 or
//     IPPROTO_TCP, since Landlock does not see Multipath TCP, which fails
//     with EPROTONOSUPPORT so that programs fall back to TCP); every other
//     family (packet, raw, vsock...) fails;
//  6. clone3 fails with ENOSYS, under every network mode. Its
//     CLONE_INTO_CGROUP starts a child in any cgroup whose cgroup.procs the
//     caller could write by file modes alone, and root owns them all: the
//     child of a root command would leave the command's cgroup, and with
//     it teardown, though Landlock refuses the write to cgroup.procs
//     (the flag's check is not one Landlock sees). seccomp cannot read
//     clone3's arguments, which are in memory, so the whole call goes;
//     ENOSYS makes the C library (threads, posix_spawn) fall back to
//     clone, which has no such flag;
//  7. chmod, fchmod, fchmodat and fchmodat2 fail when the mode sets the
//     set-user-ID or set-group-ID bit: Landlock does not cover file
//     modes, and a root command could otherwise make a root-owned
//     program outside its workspace setuid for anyone (the mode is a
//     register, read by the filter itself, not memory the command could
//     change after the check);
//  8. under NetworkAllowlist, sendto, sendmsg and sendmmsg with
//     MSG_FASTOPEN fail with EOPNOTSUPP: TCP Fast Open connects without
//     connect(2), past runbox's decisions (Landlock checks the port only);
//     programs fall back to connect, as on a kernel without it;
//  9. when the caller serves a listener (notify), under every network
//     mode, connect(2) and listen(2) go to it (SECCOMP_RET_USER_NOTIF,
//     see notify_linux.go): it decides every connect, unix sockets
//     included, and makes the allowed ones itself; open_by_handle_at,
//     and ptrace's PTRACE_ATTACH and PTRACE_SEIZE, go to it too
//     (procaccess_linux.go);
// 10. with meta (a listener, and no read-only mount layer), chmod,
//     chown, utimes, setxattr, removexattr and their f/l/at forms go
//     to the listener too (a chmod after its set-ID check), which
//     decides them on the object it resolved and makes them itself
//     (metadata_linux.go); setxattrat and removexattrat, whose
//     arguments are in a struct in memory, fail with ENOSYS.
//
// Other refusals return EPERM, which programs report as "Operation not
// permitted".

// seccomp_data offsets (linux/seccomp.h); arguments are read as their low
// 32 bits, which is the first word on the little-endian architectures this
// filter is built for.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// insn is one BPF instruction whose jump targets are labels, resolved by
// assemble.
type insn struct {
	code   uint16
	k      uint32
	jt, jf string // labels; "" means the next instruction
	label  string // this instruction's label
}

func load(off uint32) insn { return insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
func jeq(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func jge(k uint32, jt, jf string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: k, jt: jt, jf: jf}
}
func and(k uint32) insn           { return insn{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: k} }
func ret(k uint32, l string) insn { return insn{code: unix.BPF_RET | unix.BPF_K, k: k, label: l} }
func errno(e unix.Errno) uint32   { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// filter builds the program for the network mode; notify sends connect
// and listen to a listener, and with meta the metadata calls too.
func filter(network string, notify, meta bool) []insn {
	meta = meta && notify
	p := []insn{
		load(offArch),
		jeq(auditArch, "", "eperm"),
		load(offNr),
	}
	if x32Base != 0 {
		p = append(p, jge(x32Base, "eperm", ""))
	}
	p = append(p,
		jeq(uint32(unix.SYS_IO_URING_SETUP), "eperm", ""),
		jeq(uint32(unix.SYS_IO_URING_ENTER), "eperm", ""),
		jeq(uint32(unix.SYS_IO_URING_REGISTER), "eperm", ""),
		jeq(uint32(unix.SYS_CLONE3), "enosys", ""),
		// The kernel's keyrings are not files: a key runbox's user
		// holds (a cached password, a Kerberos ticket, a token a tool
		// put there) is readable by any process of that user, and
		// request_key can make the kernel run a helper, unconfined, as
		// root.
		jeq(uint32(unix.SYS_KEYCTL), "eperm", ""),
		jeq(uint32(unix.SYS_ADD_KEY), "eperm", ""),
		jeq(uint32(unix.SYS_REQUEST_KEY), "eperm", ""),
	)
	p = append(p, unixDatagramCheck()...)
	p = append(p, fileFlagsCheck()...)
	for _, c := range chmodCalls {
		p = append(p, jeq(c.nr, fmt.Sprintf("mode%d", c.arg), ""))
	}
	if notify {
		p = append(p,
			jeq(uint32(unix.SYS_CONNECT), "notify", ""),
			jeq(uint32(unix.SYS_LISTEN), "notify", ""),
			jeq(uint32(unix.SYS_OPEN_BY_HANDLE_AT), "notify", ""),
			jeq(uint32(unix.SYS_PTRACE), "ptrace", ""),
		)
	}
	if meta {
		for _, nr := range metaNumbers() {
			p = append(p, jeq(nr, "notify", ""))
		}
		for _, nr := range xattrAtCalls {
			p = append(p, jeq(nr, "enosys", ""))
		}
	}
	if network == NetworkOpen {
		// Every other call is allowed: the mode checks come after, where
		// only their own jumps reach them.
		p = append(p, ret(unix.SECCOMP_RET_ALLOW, "allow"))
		p = append(p, setIDChecks(meta)...)
		p = append(p, ptraceChecks(notify)...)
		p = append(p, ret(errno(unix.EPERM), "eperm"), ret(errno(unix.ENOSYS), "enosys"))
		return append(p, notifyReturns(notify)...)
	}
	if network == NetworkAllowlist {
		p = append(p,
			jeq(uint32(unix.SYS_SENDTO), "fastopen3", ""),
			jeq(uint32(unix.SYS_SENDMMSG), "fastopen3", ""),
			jeq(uint32(unix.SYS_SENDMSG), "fastopen2", ""),
		)
	}
	p = append(p,
		jeq(uint32(unix.SYS_SOCKET), "", "allow"),
		load(offArg0),
		jeq(unix.AF_UNIX, "allow", ""),
		jeq(unix.AF_NETLINK, "allow", ""),
		jeq(unix.AF_INET, "inet", ""),
		jeq(unix.AF_INET6, "inet", "eperm"),
	)
	if network == NetworkOff {
		p = append(p, insn{code: unix.BPF_JMP | unix.BPF_JA, jt: "eperm", label: "inet"})
	} else {
		p = append(p,
			insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg1, label: "inet"},
			and(0xf),
			jeq(unix.SOCK_STREAM, "", "eperm"),
			load(offArg2),
			jeq(0, "allow", ""),
			jeq(unix.IPPROTO_TCP, "allow", ""),
			jeq(unix.IPPROTO_MPTCP, "noproto", "eperm"),
		)
	}
	p = append(p, ret(unix.SECCOMP_RET_ALLOW, "allow"))
	p = append(p, setIDChecks(meta)...) // reached by their own jumps only
	p = append(p, ptraceChecks(notify)...)
	if network == NetworkAllowlist {
		p = append(p, fastOpenChecks()...)
		p = append(p, ret(errno(unix.EOPNOTSUPP), "eopnotsupp"))
	}
	p = append(p,
		ret(errno(unix.EPERM), "eperm"),
		ret(errno(unix.EPROTONOSUPPORT), "noproto"),
		ret(errno(unix.ENOSYS), "enosys"),
	)
	return append(p, notifyReturns(notify)...)
}

// unixDatagramCheck sends socket(2) and socketpair(2) of an AF_UNIX
// datagram socket to "unixdgram" (see notifyReturns), and leaves the
// system call number in the accumulator for every other call. The type
// is masked with 0xf: SOCK_CLOEXEC and SOCK_NONBLOCK are or'ed into it.
func unixDatagramCheck() []insn {
	return []insn{
		jeq(uint32(unix.SYS_SOCKET), "unixdgram-family", ""),
		jeq(uint32(unix.SYS_SOCKETPAIR), "unixdgram-family", "unixdgram-no"),
		{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0, label: "unixdgram-family"},
		jeq(unix.AF_UNIX, "", "unixdgram-no"),
		load(offArg1),
		and(0xf),
		jeq(unix.SOCK_DGRAM, "unixdgram", ""),
		{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offNr, label: "unixdgram-no"},
	}
}

// The ioctls that set a file's attributes (chattr's flags, and the
// extended ones of FS_IOC_FSSETXATTR): FS_IOC_SETFLAGS's 64-bit number is
// unix's; the 32-bit one is what 32-bit programs and some tools pass.
const (
	fsIOC32SetFlags  = 0x40046602
	fsIOCFSSetXattr  = 0x401c5820
	fsIOCSetFlags    = unix.FS_IOC_SETFLAGS
	fsFlagsCheckNext = "fsflags-no"
)

// fileFlagsCheck sends the ioctls that set a file's attributes to
// "eperm": they change the metadata of any file the program can open,
// inside the writable roots or not (chattr +d takes a file out of dump's
// backups, +S makes every write to it synchronous), and no file rule
// covers an ioctl on a file that is not a device.
func fileFlagsCheck() []insn {
	return []insn{
		jeq(uint32(unix.SYS_IOCTL), "", fsFlagsCheckNext),
		load(offArg1),
		jeq(fsIOCSetFlags, "eperm", ""),
		jeq(fsIOC32SetFlags, "eperm", ""),
		jeq(fsIOCFSSetXattr, "eperm", ""),
		{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offNr, label: fsFlagsCheckNext},
	}
}

// notifyReturns are the filter's last returns: "unixdgram" (a unix
// datagram socket: to the listener, which reports it and answers EACCES,
// or EACCES at once without one) and, with a listener, "notify".
func notifyReturns(notify bool) []insn {
	if !notify {
		return []insn{ret(errno(unix.EACCES), "unixdgram")}
	}
	return []insn{ret(unix.SECCOMP_RET_USER_NOTIF, "unixdgram"), ret(unix.SECCOMP_RET_USER_NOTIF, "notify")}
}

// ptraceChecks is the block ptrace jumps to ("ptrace") when the caller
// serves a listener: PTRACE_ATTACH and PTRACE_SEIZE go to it
// (procaccess_linux.go), every other request is allowed. The request is
// read as its low 32 bits; the listener reads it whole.
func ptraceChecks(notify bool) []insn {
	if !notify {
		return nil
	}
	return []insn{
		{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0, label: "ptrace"},
		jeq(unix.PTRACE_ATTACH, "notify", ""),
		jeq(unix.PTRACE_SEIZE, "notify", ""),
		ret(unix.SECCOMP_RET_ALLOW, "ptrace-ok"),
	}
}

// maskChecks are blocks that other jumps reach, labelled prefix and the
// index of an argument: the call fails with the errno labelled fail when
// that argument holds any bit of mask, and ends in pass (an allow, or a
// notification) otherwise. They come after the filter's "allow" (jumps
// only go forward) and end in a return of their own, so no other call
// falls into them.
func maskChecks(prefix string, args []uint32, mask uint32, fail string, pass uint32) []insn {
	var p []insn
	for _, arg := range args {
		p = append(p,
			insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArg0 + 8*arg, label: fmt.Sprintf("%s%d", prefix, arg)},
			and(mask),
			jeq(0, prefix+"-ok", fail),
		)
	}
	return append(p, ret(pass, prefix+"-ok"))
}

// setIDChecks are the blocks chmodCalls jump to ("mode1", "mode2"): the
// mode may not hold the set-user-ID or set-group-ID bit. With meta a
// mode without them goes to the listener, as the other metadata calls.
func setIDChecks(meta bool) []insn {
	pass := uint32(unix.SECCOMP_RET_ALLOW)
	if meta {
		pass = unix.SECCOMP_RET_USER_NOTIF
	}
	return maskChecks("mode", []uint32{1, 2}, unix.S_ISUID|unix.S_ISGID, "eperm", pass)
}

// fastOpenChecks are the blocks sendto, sendmsg and sendmmsg jump to under
// NetworkAllowlist ("fastopen2", "fastopen3": their flags): TCP Fast Open
// connects without connect(2), so no decision of runbox's would see it,
// and Landlock checks its port only. It fails with EOPNOTSUPP, the answer
// of a kernel without Fast Open, on which programs fall back to connect.
func fastOpenChecks() []insn {
	return maskChecks("fastopen", []uint32{2, 3}, unix.MSG_FASTOPEN, "eopnotsupp", unix.SECCOMP_RET_ALLOW)
}

// assemble resolves labels into relative jumps.
func assemble(p []insn) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if in.label != "" {
			at[in.label] = i
		}
	}
	rel := func(i int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		t, ok := at[l]
		if !ok || t <= i || t-i-1 > 255 {
			return 0, fmt.Errorf("confine: seccomp: bad jump to %q at %d", l, i)
		}
		return uint8(t - i - 1), nil
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		f := unix.SockFilter{Code: in.code, K: in.k}
		var err error
		if in.code == unix.BPF_JMP|unix.BPF_JA {
			var k uint8
			k, err = rel(i, in.jt)
			f.K = uint32(k)
		} else if in.code&0x07 == unix.BPF_JMP {
			if f.Jt, err = rel(i, in.jt); err == nil {
				f.Jf, err = rel(i, in.jf)
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// seccompProgram assembles the filter for the network mode (see filter).
func seccompProgram(network string, notify, meta bool) ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("confine: seccomp: no filter for this architecture")
	}
	return assemble(filter(network, notify, meta))
}

// loadSeccomp loads prog into the calling thread, which must already have
// no_new_privs; it survives execve and is inherited by the thread's
// children. With listen it returns the filter's notification listener
// (close-on-exec), else -1.
func loadSeccomp(prog []unix.SockFilter, listen bool) (listener int, err error) {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var flags uintptr
	if listen {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fp)))
	if e != 0 {
		return -1, fmt.Errorf("confine: installing the seccomp filter: %w", e)
	}
	if !listen {
		return -1, nil
	}
	return int(fd), nil
}
