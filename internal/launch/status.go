package launch

import (
	"os"
	"syscall"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// Status is how a reaped process ended: killed by signal n it is
// envs.SignalStatus(n) (code 128+n); otherwise its exit code as is. ok
// is false when ps is nil (the process was never reaped).
func Status(ps *os.ProcessState) (st envs.ExitStatus, ok bool) {
	if ps == nil {
		return envs.ExitStatus{}, false
	}
	if ws, wok := ps.Sys().(syscall.WaitStatus); wok {
		return WaitStatus(ws), true
	}
	return envs.ExitStatus{Code: ps.ExitCode()}, true
}

// WaitStatus is [Status] for a raw wait status (from syscall.Wait4).
func WaitStatus(ws syscall.WaitStatus) envs.ExitStatus {
	if ws.Signaled() {
		return envs.SignalStatus(ws.Signal())
	}
	return envs.ExitStatus{Code: ws.ExitStatus()}
}

// ShellStatus reads an exit code that a shell reported for its child. A
// shell reports a child killed by signal n as 128+n; such a code, for a
// signal whose default action ends a process, is read as that signal.
// (A program that exits 128+n by itself is indistinguishable from it;
// the code is the same either way.) Use it only where a shell stands
// between the process and its reaper; a code from [Status] is exact.
func ShellStatus(code int) envs.ExitStatus {
	if code > envs.ExitSignalBase && code <= envs.ExitSignalBase+64 {
		sig := syscall.Signal(code - envs.ExitSignalBase)
		if terminates(sig) {
			return envs.SignalStatus(sig)
		}
	}
	return envs.ExitStatus{Code: code}
}

// terminates reports whether sig's default action ends a process (it
// neither stops it nor is ignored).
func terminates(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGSTOP, syscall.SIGTSTP,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGURG, syscall.SIGWINCH:
		return false
	}
	return true
}

// LimitKilled names in st the limit of cont that killed the command
// (envs.ExitStatus.KilledBy: "memory-limit", "pids-limit"), when one
// fired and the command failed. A nil cont leaves st as it is.
func LimitKilled(st envs.ExitStatus, cont termination.Container) envs.ExitStatus {
	if cont == nil || st.Code == 0 {
		return st
	}
	if ev := cont.LimitEvent(); ev != "" {
		st.KilledBy = envs.KillCause(ev)
	}
	return st
}
