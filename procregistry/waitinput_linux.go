package procregistry

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/termination"
)

// A job waits for input when one of its processes sleeps in a read of
// the job's stdin: the pipe the supervisor writes, or the job's
// terminal. That is a fact the kernel shows in /proc, never a guess from
// the output's text (a prompt without a newline looks like any other
// pause). For each process of the job's tree (the wrapper's descendants,
// read from /proc) the registry looks at:
//
//   - /proc/PID/stat: the state must be S (an interruptible sleep, which
//     is where a blocked read sleeps; a stopped process, T, is not
//     reading), and the controlling terminal (tty_nr) for /dev/tty;
//   - /proc/PID/syscall: the system call it sleeps in and its arguments.
//     A read, readv, pread64, preadv or preadv2 names its descriptor; a
//     pselect6 with nfds 1 and a read set can only wait on descriptor 0.
//     The kernel shows this file to a process that may ptrace the job's
//     (PTRACE_MODE_ATTACH): the same user without a Yama ptrace_scope
//     above 0, or root;
//   - where that file cannot be read, /proc/PID/wchan: the kernel
//     function it sleeps in (anon_pipe_read or pipe_read on a pipe,
//     n_tty_read or wait_woken on a terminal), with descriptor 0 as the
//     one read. wchan needs only PTRACE_MODE_READ. wait_woken is not
//     specific to terminals (a socket read sleeps there too), so this
//     fallback can take a process that reads a socket while its stdin is
//     the job's terminal for one that reads the terminal;
//   - /proc/PID/fd/N: the descriptor must be the job's stdin (the same
//     pipe or terminal as the wrapper's descriptor 0; for a terminal job
//     also /dev/tty when the process's controlling terminal is the job's).
//
// What is not seen: a process that waits on stdin through poll, ppoll,
// epoll or select (the descriptors are in its memory, which the registry
// does not read), such as Node's readline or most event loops; a process
// that left the job's tree (a double fork) reading the job's terminal;
// and any job whose processes this one may not look at (another user's).

// blockedReadCalls are the system calls that read one descriptor, named
// by their first argument.
var blockedReadCalls = map[int]bool{
	unix.SYS_READ: true, unix.SYS_READV: true, unix.SYS_PREAD64: true,
	unix.SYS_PREADV: true, unix.SYS_PREADV2: true,
}

// readWchans are the kernel functions a read of a pipe or a terminal
// sleeps in (they vary with the kernel's version).
var readWchans = map[string]bool{
	"anon_pipe_read": true, "pipe_read": true, "pipe_wait": true, "pipe_wait_readable": true,
	"n_tty_read": true, "wait_woken": true,
}

// devTTY is the device number of /dev/tty (5, 0).
var devTTY = unix.Mkdev(5, 0)

// fileID is what tells two open files apart.
type fileID struct {
	dev, ino, rdev uint64
	char           bool
}

func statID(path string) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino, rdev: st.Rdev, char: st.Mode&unix.S_IFMT == unix.S_IFCHR}, true
}

// waitingForInput returns the PID of a process of the job's tree that
// sleeps reading the job's stdin, or 0.
func waitingForInput(pids *pidRecord) int {
	if pids == nil {
		return 0
	}
	root := pids.Wrapper
	if root.PID == 0 || !root.Alive() {
		root = pids.Command
	}
	if root.PID == 0 || !root.Alive() {
		return 0
	}
	stdin, ok := statID("/proc/" + strconv.Itoa(root.PID) + "/fd/0")
	if !ok {
		return 0
	}
	procs, err := termination.Descendants(root.PID)
	if err != nil {
		return 0
	}
	procs = append(procs, root)
	for _, p := range procs {
		if readsStdin(p.PID, stdin, probeSyscall) {
			return p.PID
		}
	}
	return 0
}

// probeMethod is which files readsStdin may use: /proc/PID/syscall
// first, or wchan only (what a registry that may not attach to the
// job's processes gets; tests use it to check that path).
type probeMethod int

const (
	probeSyscall probeMethod = iota
	probeWchan
)

// readsStdin reports whether pid sleeps in a read of stdin.
func readsStdin(pid int, stdin fileID, how probeMethod) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state; f[4] field 7, tty_nr
	if len(f) < 5 || string(f[0]) != "S" {
		return false
	}
	tty, _ := strconv.ParseUint(string(f[4]), 10, 64)
	isStdin := func(fd int) bool {
		id, ok := statID(dir + "/fd/" + strconv.Itoa(fd))
		switch {
		case !ok:
			return false
		case id.dev == stdin.dev && id.ino == stdin.ino:
			return true
		case stdin.char && id.char && id.rdev == stdin.rdev:
			return true // the same terminal through another path
		}
		return stdin.char && id.char && id.rdev == devTTY && tty == stdin.rdev
	}
	if fd, known := syscallFD(dir); known && how == probeSyscall {
		return fd >= 0 && isStdin(fd)
	}
	w, err := os.ReadFile(dir + "/wchan")
	return err == nil && readWchans[strings.TrimSpace(string(w))] && isStdin(0)
}

// syscallFD reads /proc/PID/syscall: known is false where the file
// cannot be read (or the process runs); fd is the descriptor a blocking
// read waits on, or -1 when it sleeps in anything else.
func syscallFD(dir string) (fd int, known bool) {
	b, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		return -1, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return -1, false // "running", or a kernel thread
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return -1, false
	}
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	switch {
	case blockedReadCalls[nr]:
		return int(int32(arg(0))), true
	case nr == unix.SYS_PSELECT6 && arg(0) == 1 && arg(1) != 0:
		return 0, true // nfds 1: the read set can hold descriptor 0 only
	}
	return -1, true
}
