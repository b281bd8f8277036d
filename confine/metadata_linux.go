package confine

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock does not cover file metadata: chmod, chown, utimes and
// extended attributes. As root, the read-only mount layer
// (mountns_linux.go) refuses them outside the writable roots; without it
// (no CAP_SYS_ADMIN: a user, or root in most containers) the seccomp
// filter hands every such call to the notification listener, which
// decides and makes it here:
//
//   - the object is opened once, as the program would resolve it (from
//     its working directory, its root or its directory descriptor, the
//     last link followed or not as the call says), as an O_PATH
//     descriptor; a descriptor call takes the program's own descriptor
//     (pidfd_getfd);
//   - the decision is on that descriptor's path: inside a writable root
//     of the policy and outside the deny list, as for unix sockets;
//   - the change is made here on that descriptor, never through the name
//     again, which another thread of the program could have changed after
//     the decision; none is continued to the kernel;
//   - it is made with the program's file-system identity (its fsuid,
//     fsgid and groups) and no capability, so the kernel's own checks
//     (owner, group) are the ones the program would meet; a set-ID mode
//     is refused here as in the filter.
//
// A refusal is EACCES, reported as a violation naming the resolved path;
// whatever goes wrong on the way (memory unreadable, /proc gone) is
// EPERM or the error met, never a continue. Calls are made one at a time
// on the listener's goroutine: a flood of them queues in the kernel and
// holds no more of this process than one.

// Ops of metadata violations.
const (
	opChmod       = "chmod"
	opChown       = "chown"
	opUtimes      = "utimes"
	opSetxattr    = "setxattr"
	opRemovexattr = "removexattr"
)

// xattrNameMax is XATTR_NAME_MAX (linux/limits.h).
const xattrNameMax = 255

// Rule of the metadata refusals, for violations.
const ruleMetadata = "file metadata outside the command's writable directories"

// form is how a metadata call names its object.
type form uint8

const (
	formPath form = iota // path in argument 0
	formAt               // directory descriptor in argument 0, path in 1
	formFD               // descriptor in argument 0
)

// timesLayout is how a call passes its times.
type timesLayout uint8

const (
	timespecTimes timesLayout = iota // struct timespec[2] (utimensat)
	timevalTimes                     // struct timeval[2] (utimes, futimesat)
	utimbufTimes                     // struct utimbuf (utime)
)

// metaShape describes a metadata call's arguments: after the object
// (one argument, two for formAt) come the op's own (mode; owner and
// group; times; name, value, size and flags of an attribute).
type metaShape struct {
	op       string
	form     form
	flags    uint8 // index of an AT_* flags argument (0: none)
	nofollow bool  // the last link is not followed (lchown, l*xattr)
	layout   timesLayout
}

// metaCalls are the metadata calls of every architecture.
var metaCalls = map[uint32]metaShape{
	unix.SYS_FCHMOD:       {op: opChmod, form: formFD},
	unix.SYS_FCHMODAT:     {op: opChmod, form: formAt},
	unix.SYS_FCHMODAT2:    {op: opChmod, form: formAt, flags: 3},
	unix.SYS_FCHOWN:       {op: opChown, form: formFD},
	unix.SYS_FCHOWNAT:     {op: opChown, form: formAt, flags: 4},
	unix.SYS_UTIMENSAT:    {op: opUtimes, form: formAt, flags: 3},
	unix.SYS_SETXATTR:     {op: opSetxattr, form: formPath},
	unix.SYS_LSETXATTR:    {op: opSetxattr, form: formPath, nofollow: true},
	unix.SYS_FSETXATTR:    {op: opSetxattr, form: formFD},
	unix.SYS_REMOVEXATTR:  {op: opRemovexattr, form: formPath},
	unix.SYS_LREMOVEXATTR: {op: opRemovexattr, form: formPath, nofollow: true},
	unix.SYS_FREMOVEXATTR: {op: opRemovexattr, form: formFD},
}

// metaNumbers are the numbers of every metadata call of this
// architecture, for the filter (chmodCalls are sent by their set-ID
// check instead).
func metaNumbers() []uint32 {
	var nrs []uint32
	for _, calls := range []map[uint32]metaShape{metaCalls, legacyMetaCalls} {
		for nr, s := range calls {
			if s.op != opChmod {
				nrs = append(nrs, nr)
			}
		}
	}
	slices.Sort(nrs) // one program for one policy
	return nrs
}

// xattrAtCalls are setxattrat and removexattrat (Linux 6.13), which pass
// their arguments in a structure: they fail with ENOSYS, as on an older
// kernel, and programs fall back to setxattr and removexattr.
var xattrAtCalls = []uint32{unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTRAT}

// metaCall is one metadata call, read from the program.
type metaCall struct {
	metaShape
	fd       int    // the descriptor (formFD) or directory (formAt)
	path     string // formPath, formAt
	empty    bool   // AT_EMPTY_PATH
	mode     uint32
	uid, gid int
	times    *[2]unix.Timespec // nil: now
	name     string
	value    []byte
	xflags   int
}

// shapeOf is the shape of system call nr, when it is a metadata call.
func shapeOf(nr uint32) (metaShape, bool) {
	if s, ok := metaCalls[nr]; ok {
		return s, true
	}
	s, ok := legacyMetaCalls[nr]
	return s, ok
}

// readMeta reads the call of req (of shape s) from the program.
func readMeta(req *seccompNotif, s metaShape) (metaCall, unix.Errno) {
	pid, a := int(req.Pid), req.Args
	c := metaCall{metaShape: s, fd: unix.AT_FDCWD}
	rest := 1
	switch s.form {
	case formFD:
		c.fd = int(int32(a[0]))
	case formAt:
		c.fd, rest = int(int32(a[0])), 2
	}
	if s.flags != 0 {
		f := int(int32(a[s.flags]))
		if f&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return c, unix.EINVAL
		}
		c.nofollow = c.nofollow || f&unix.AT_SYMLINK_NOFOLLOW != 0
		c.empty = f&unix.AT_EMPTY_PATH != 0
	}
	if errno := c.readPath(pid, a); errno != 0 {
		return c, errno
	}
	return c, c.readArgs(pid, a[rest:])
}

// readPath reads the path of a formPath or formAt call. utimensat with
// no path acts on its descriptor: it becomes a formFD call.
func (c *metaCall) readPath(pid int, a [6]uint64) unix.Errno {
	var ptr uint64
	switch c.form {
	case formFD:
		return 0
	case formPath:
		ptr = a[0]
	case formAt:
		ptr = a[1]
	}
	if ptr == 0 && c.form == formAt && c.op == opUtimes {
		if c.fd == unix.AT_FDCWD || c.nofollow || c.empty {
			return unix.EINVAL
		}
		c.form = formFD
		return 0
	}
	p, errno := readString(pid, uintptr(ptr), unix.PathMax)
	if errno == unix.ERANGE {
		errno = unix.ENAMETOOLONG
	}
	c.path = p
	return errno
}

// readArgs reads the op's own arguments, a.
func (c *metaCall) readArgs(pid int, a []uint64) unix.Errno {
	switch c.op {
	case opChmod:
		c.mode = uint32(a[0])
	case opChown:
		c.uid, c.gid = int(int32(a[0])), int(int32(a[1]))
	case opUtimes:
		t, errno := readTimes(pid, uintptr(a[0]), c.layout)
		c.times = t
		return errno
	case opSetxattr, opRemovexattr:
		name, errno := readString(pid, uintptr(a[0]), xattrNameMax+1)
		if errno == unix.ERANGE || name == "" {
			return unix.ERANGE
		}
		c.name = name
		if errno != 0 || c.op == opRemovexattr {
			return errno
		}
		return c.readValue(pid, uintptr(a[1]), a[2], a[3])
	}
	return 0
}

// readValue reads an attribute's value of size bytes at ptr, and its
// flags.
func (c *metaCall) readValue(pid int, ptr uintptr, size, flags uint64) unix.Errno {
	const xattrSizeMax = 65536
	if size > xattrSizeMax {
		return unix.E2BIG
	}
	c.xflags = int(int32(flags))
	c.value = make([]byte, size)
	return readMem(pid, ptr, c.value)
}

// readMem fills buf from the program's memory at ptr.
func readMem(pid int, ptr uintptr, buf []byte) unix.Errno {
	if len(buf) == 0 {
		return 0
	}
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: ptr, Len: len(buf)}}
	if got, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil || got != len(buf) {
		return unix.EFAULT
	}
	return 0
}

// readString reads the NUL-terminated string at ptr, of fewer than max
// bytes (ERANGE when it is longer). It reads page by page: a string may
// end just before unmapped memory.
func readString(pid int, ptr uintptr, max int) (string, unix.Errno) {
	if ptr == 0 {
		return "", unix.EFAULT
	}
	page := uintptr(os.Getpagesize())
	var out []byte
	for len(out) < max {
		chunk := make([]byte, min(int(page-(ptr%page)), max-len(out)))
		if errno := readMem(pid, ptr, chunk); errno != 0 {
			return "", errno
		}
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			return string(append(out, chunk[:i]...)), 0
		}
		out = append(out, chunk...)
		ptr += uintptr(len(chunk))
	}
	return "", unix.ERANGE
}

// readTimes reads the two times at ptr (nil when ptr is: now) as
// timespecs.
func readTimes(pid int, ptr uintptr, layout timesLayout) (*[2]unix.Timespec, unix.Errno) {
	if ptr == 0 {
		return nil, 0
	}
	var raw [4]int64
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&raw[0])), 32)
	if layout == utimbufTimes {
		buf = buf[:16]
	}
	if errno := readMem(pid, ptr, buf); errno != 0 {
		return nil, errno
	}
	var t [2]unix.Timespec
	switch layout {
	case timespecTimes:
		t[0], t[1] = unix.Timespec{Sec: raw[0], Nsec: raw[1]}, unix.Timespec{Sec: raw[2], Nsec: raw[3]}
	case timevalTimes:
		for i := range t {
			sec, usec := raw[2*i], raw[2*i+1]
			if usec < 0 || usec >= 1e6 {
				return nil, unix.EINVAL
			}
			t[i] = unix.Timespec{Sec: sec, Nsec: usec * 1000}
		}
	case utimbufTimes:
		t[0], t[1] = unix.Timespec{Sec: raw[0]}, unix.Timespec{Sec: raw[1]}
	}
	return &t, 0
}

// metadata decides a metadata call of shape s and, when it is allowed,
// makes it here on the object it resolved to.
func (n *notifier) metadata(req *seccompNotif, s metaShape) {
	c, errno := readMeta(req, s)
	if errno != 0 {
		n.answer(req.ID, false, errno)
		return
	}
	fd, opath, errno := n.objectOf(req, &c)
	if errno != 0 {
		n.answer(req.ID, false, errno)
		return
	}
	defer unix.Close(fd)
	if !n.valid(req.ID) {
		n.answer(req.ID, false, unix.EINTR) // the caller is gone: the answer is lost
		return
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	switch {
	case err != nil:
		errno = unix.EPERM
	case !n.unix.writes(real):
		n.refusedMeta(c.op, real, ruleMetadata)
		errno = unix.EACCES
	case c.op == opChmod && c.mode&(unix.S_ISUID|unix.S_ISGID) != 0:
		n.refusedMeta(c.op, real, "set-user-ID and set-group-ID bits")
		errno = unix.EPERM
	default:
		errno = n.callers.asCaller(int(req.Pid), func() unix.Errno { return c.apply(fd, opath) })
	}
	n.answer(req.ID, false, errno)
}

// objectOf opens the object of call c: an O_PATH descriptor (opath) of
// what its path resolves to for the program, or a duplicate of its
// descriptor.
func (n *notifier) objectOf(req *seccompNotif, c *metaCall) (fd int, opath bool, errno unix.Errno) {
	if c.form == formFD {
		fd, err := n.socketOf(req, c.fd)
		if err != nil {
			return -1, false, errnoOf(err, unix.EBADF)
		}
		// The kernel refuses these calls on an O_PATH descriptor; this
		// process, acting through /proc, would not.
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_PATH != 0 {
			unix.Close(fd)
			return -1, false, unix.EBADF
		}
		return fd, false, 0
	}
	fd, errno = openFrom(int(req.Pid), c.fd, c.path, c.nofollow, c.empty)
	return fd, true, errno
}

// openFrom opens path as process pid would resolve it from its
// directory descriptor dirfd (or its working directory, AT_FDCWD), as an
// O_PATH descriptor; with nofollow a last link is the object itself.
// /proc's magic links are refused: this process would resolve them as
// its own.
func openFrom(pid, dirfd int, path string, nofollow, empty bool) (int, unix.Errno) {
	proc := "/proc/" + strconv.Itoa(pid)
	base, badBase := proc+"/cwd", unix.EPERM
	if dirfd != unix.AT_FDCWD {
		base, badBase = proc+"/fd/"+strconv.Itoa(dirfd), unix.EBADF
	}
	if path == "" {
		if !empty {
			return -1, unix.ENOENT
		}
		fd, err := unix.Open(base, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, badBase
		}
		return fd, 0
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	if nofollow {
		how.Flags |= unix.O_NOFOLLOW
	}
	if strings.HasPrefix(path, "/") {
		base, badBase, how.Resolve = proc+"/root", unix.EPERM, how.Resolve|unix.RESOLVE_IN_ROOT
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOTDIR {
		return -1, unix.ENOTDIR
	}
	if err != nil {
		return -1, badBase
	}
	defer unix.Close(dir)
	return openat2(dir, path, &how, unix.EPERM)
}

// apply makes call c on fd: an O_PATH descriptor (opath), reached through
// /proc/self/fd, or an open file of the program's.
func (c *metaCall) apply(fd int, opath bool) unix.Errno {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	var err error
	switch c.op {
	case opChmod:
		err = chmodFD(fd, self, opath, c.mode&07777)
	case opChown:
		err = unix.Fchownat(fd, "", c.uid, c.gid, unix.AT_EMPTY_PATH)
	case opUtimes:
		err = utimensFD(fd, self, opath, c.times)
	case opSetxattr:
		if opath {
			err = unix.Setxattr(self, c.name, c.value, c.xflags)
		} else {
			err = unix.Fsetxattr(fd, c.name, c.value, c.xflags)
		}
	case opRemovexattr:
		if opath {
			err = unix.Removexattr(self, c.name)
		} else {
			err = unix.Fremovexattr(fd, c.name)
		}
	}
	if err == nil {
		return 0
	}
	return errnoOf(err, unix.EPERM)
}

// chmodFD sets the mode of fd's object (self: its /proc/self/fd name).
// A link has no mode of its own: EOPNOTSUPP, as fchmodat2 answers.
func chmodFD(fd int, self string, opath bool, mode uint32) error {
	if !opath {
		return unix.Fchmod(fd, mode)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	return unix.Fchmodat(unix.AT_FDCWD, self, mode, 0)
}

// utimensFD sets the times of fd's object (nil times: now). Through
// /proc/self/fd an O_PATH descriptor of a link reaches the link itself.
func utimensFD(fd int, self string, opath bool, times *[2]unix.Timespec) error {
	dirfd, p := fd, (*byte)(nil)
	if opath {
		b, err := unix.BytePtrFromString(self)
		if err != nil {
			return err
		}
		dirfd, p = unix.AT_FDCWD, b
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(times)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// refusedMeta reports a refused metadata call on target.
func (n *notifier) refusedMeta(op, target, rule string) {
	if n.report != nil {
		n.report(Violation{Op: op, Target: target, Rule: rule})
	}
}
