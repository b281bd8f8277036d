package supervisor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/runbox/runbox/procregistry/internal/jobdir"
)

// stage2Flag marks the detached second stage of the supervisor.
const stage2Flag = "-detached"

// Main is the main function of a job's supervisor. The program that
// procregistry.Options.Supervisor names calls it with the arguments that
// follow its own (for runbox: `runbox __supervise JOBDIR`), and exits
// with what it returns: 0 once the job's command runs or its start
// failure is recorded in the job directory, 1 when the supervisor itself
// could not start (its message is on stdout), 2 for a bad usage. See the
// package documentation for the two stages.
func Main(args []string) int {
	if len(args) == 2 && args[0] == stage2Flag {
		return superviseDetached(args[1])
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "supervisor: usage: __supervise JOBDIR")
		return 2
	}
	return superviseLaunch(args[0])
}

// superviseLaunch is the first stage.
func superviseLaunch(dir string) int {
	fail := func(err error) int {
		fmt.Printf("supervisor: %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	// The argv that ran this stage, minus its last argument (the dir).
	argv := append(append([]string{}, os.Args[:len(os.Args)-1]...), stage2Flag, dir)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	defer devnull.Close()
	supLog, err := jobdir.OpenPrivateFile(filepath.Join(dir, jobdir.FileSupLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	defer supLog.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	// Env nil: the second stage inherits this process's environment,
	// which is the child environment the backend built with spawn.
	p, err := os.StartProcess(self, argv, &os.ProcAttr{
		Files: []*os.File{devnull, devnull, supLog, w},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	w.Close()
	if err != nil {
		r.Close()
		return fail(err)
	}
	p.Release()
	msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	r.Close()
	if s := strings.TrimSpace(string(msg)); s != "ok" {
		if s == "" {
			s = "detached supervisor exited before reporting"
		}
		fmt.Println(s)
		return 1
	}
	return 0
}
