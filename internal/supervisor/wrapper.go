package supervisor

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/internal/launch"
)

// A job's command does not run as the supervisor's child but under a
// wrapper: a small POSIX shell that runs the command in the foreground,
// writes its exit code to the job's exitcode file and exits with it. Only
// a process's parent can learn its exit status, so without the wrapper a
// job whose supervisor died (SIGKILL, OOM) could only be declared lost;
// with it, the exit code is on disk whatever happens to the supervisor,
// and the registry reads it once the wrapper is gone (procregistry's orphan.go). The
// wrapper costs one idle shell per job, the lightest process that can
// wait for a child.
//
// File descriptors: 0–2 are the command's (the log opened O_APPEND, or
// the terminal); 3 is the gate (a launch.Barrier at launch.BarrierFD: the
// wrapper waits for one line before running anything, so the supervisor
// can put it in the job's container first; if the gate closes instead,
// it exits launch.ExitBarrierClosed without running anything); 4 is the report pipe, on which the command announces
// its own PID before it execs (a shell cannot name its foreground child).
//
// The wrapper:
//   - sends its own stderr to /dev/null, so a shell's "Killed" notice
//     about the command never lands in the job's log; the command gets the
//     real stderr back in a subshell that then execs it (a redirection on
//     the command itself would not do: dash applies it in the wrapper for
//     the command's duration and prints the notice through it);
//   - catches HUP, INT, QUIT and TERM with a handler that does nothing,
//     so a signal sent to the whole process group (a terminal's ^C, a
//     hangup) reaches the command with its default action and the wrapper
//     stays to record how it ended; a caught signal is reset to the
//     default in the command, where an ignored one would be inherited;
//   - reports the command's PID from an inner shell that then execs the
//     command, with SIGPIPE ignored only around that write.
const wrapperScript = `f=$1; shift
exec 5>&2 2>/dev/null
trap : HUP INT QUIT TERM
IFS= read -r _ <&3 || exit 125
exec 3<&-
(exec 2>&5 5>&-; exec /bin/sh -c 'trap "" PIPE; echo $$ >&4; trap - PIPE; exec "$@" 4>&-' runbox "$@")
s=$?
echo "$s" >"$f"
exit "$s"`

// wrapperShell is the shell the wrapper runs in: launch's (/bin/sh),
// which POSIX systems have. Without it a job runs unwrapped (and
// uncontained: the gate is the same shell).
const wrapperShell = launch.HoldShell

// hasWrapperShell reports whether the wrapper can run here.
func hasWrapperShell() bool {
	fi, err := os.Stat(wrapperShell)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// wrapperArgv is the argv of the wrapper that runs path (with argv[1:])
// for the job in dir.
func wrapperArgv(dir, path string, argv []string) []string {
	return append([]string{wrapperShell, "-c", wrapperScript, "runbox", filepath.Join(dir, jobdir.FileExitCode), path}, argv[1:]...)
}

// readReportedPID reads the PID the command announced on the report pipe.
// It returns 0 when the pipe closed first (the command never started:
// the wrapper ended, or was killed, before it).
func readReportedPID(r *os.File) int {
	line, _ := bufio.NewReader(r).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
