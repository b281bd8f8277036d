package confine

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The kernel refuses a confined program two ways into another process
// or past the file rules without asking runbox: ptrace of a process
// outside its Landlock domain, and open_by_handle_at, which needs a
// capability the program never has. Refused so, they could only be
// guessed from the program's output. The filter sends both to the
// listener instead, which decides them itself and reports each refusal
// as decided:
//
//   - ptrace PTRACE_ATTACH and PTRACE_SEIZE (the requests that take a
//     process to trace; every other request needs one already taken) of
//     a descendant of the caller go on to the kernel, whose own checks
//     still apply (continuing is safe here: the kernel decides again); of
//     any other process they fail with EPERM and are reported as "ptrace"
//     of that process. This is Yama's ptrace_scope 1, the usual default:
//     a debugger attaches to what it started (gdb, strace -f, a test
//     runner's children), not to a process it did not;
//   - open_by_handle_at fails with EPERM, as it would, and is reported.

// Rules of the process-access refusals, for violations.
const (
	ruleOutsideProcess = "process outside the sandbox"
	ruleFileHandle     = "file handles bypass the file rules"
)

// ptrace decides a PTRACE_ATTACH or PTRACE_SEIZE (others go on).
func (n *notifier) ptrace(req *seccompNotif) {
	request, target := req.Args[0], int(int32(req.Args[1]))
	if request != unix.PTRACE_ATTACH && request != unix.PTRACE_SEIZE {
		n.answer(req.ID, true, 0)
		return
	}
	if descends(target, int(req.Pid)) {
		n.answer(req.ID, true, 0)
		return
	}
	if n.report != nil {
		n.report(Violation{Op: "ptrace", Target: processName(target), Rule: ruleOutsideProcess})
	}
	n.answer(req.ID, false, unix.EPERM)
}

// openByHandle refuses open_by_handle_at.
func (n *notifier) openByHandle(req *seccompNotif) {
	if n.report != nil {
		n.report(Violation{Op: "open_by_handle_at", Target: "file handle", Rule: ruleFileHandle})
	}
	n.answer(req.ID, false, unix.EPERM)
}

// descends reports whether process pid has ancestor among its parents.
// A process whose parent cannot be read (gone, or another PID
// namespace's) does not descend.
func descends(pid, ancestor int) bool {
	for range 4096 { // deeper than any real tree; a loop cannot hold us
		if pid <= 1 {
			return false
		}
		parent := parentOf(pid) // handover_linux.go
		if parent == 0 {
			return false
		}
		if parent == ancestor {
			return true
		}
		pid = parent
	}
	return false
}

// processName is how a violation names process pid: "process PID (comm)".
func processName(pid int) string {
	name := "process " + strconv.Itoa(pid)
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
		name += " (" + strings.TrimSpace(string(b)) + ")"
	}
	return name
}
