package supervisor

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runbox/runbox/internal/jobdir"
	"github.com/runbox/runbox/statedir"
)

// Flags of Main's argument list (see Main).
const (
	stage2Flag = "-detached" // the detached second stage of a per-job supervisor
	ownFlag    = "-own"      // a supervisor of the job's own: no host
	hostFlag   = "-host"     // start the host of a state directory; "-host-detached" is the host
)

// Main is the main function of a job's supervisor and of the supervisor
// host. The program that procregistry.Options.Supervisor names calls it
// with the arguments that follow its own (for runbox: `runbox
// __supervise ...`), and exits with what it returns:
//
//   - JOBDIR: the first stage of a job's supervision: it hands the job to
//     the state directory's host, or, where the host cannot hold it (or
//     runs none), starts a supervisor of the job's own;
//   - -own JOBDIR: the same, never through the host;
//   - -host STATEDIR: starts the host of STATEDIR unless one runs.
//
// It returns 0 once the job's command runs or its start failure is
// recorded in the job directory (or the host runs), 1 when the
// supervisor itself could not start (its message is on stdout), 2 for a
// bad usage. See the package documentation.
func Main(args []string) int {
	switch {
	case len(args) == 2 && args[0] == stage2Flag:
		return superviseDetached(args[1])
	case len(args) == 2 && args[0] == ownFlag:
		return superviseLaunch(args[1], false)
	case len(args) == 2 && args[0] == hostFlag:
		return hostLaunch(args[1])
	case len(args) == 2 && args[0] == hostFlag+"-detached":
		return hostMain(args[1])
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		return superviseLaunch(args[0], true)
	}
	fmt.Fprintln(os.Stderr, "supervisor: usage: __supervise [-own] JOBDIR | -host STATEDIR")
	return 2
}

// superviseLaunch is the first stage: it runs with the job's environment
// and working directory, as the backend started it.
func superviseLaunch(dir string, useHost bool) int {
	if useHost {
		if code, done := viaHost(dir); done {
			return code
		}
	}
	fail := func(err error) int {
		fmt.Printf("supervisor: %v\n", err)
		return 1
	}
	// The argv that ran this stage, minus its arguments.
	argv := append(append([]string{}, os.Args[:len(os.Args)-1]...), stage2Flag, dir)
	if !useHost {
		argv = append(append([]string{}, os.Args[:len(os.Args)-2]...), stage2Flag, dir)
	}
	// The second stage inherits this process's environment, which is the
	// child environment the backend built with spawn.
	msg, err := startDetached(argv, filepath.Join(dir, jobdir.FileSupLog))
	if err != nil {
		return fail(err)
	}
	if msg != "ok" {
		if msg == "" {
			msg = "detached supervisor exited before reporting"
		}
		fmt.Println(msg)
		return 1
	}
	return 0
}

// hostDial bounds the connection to the host (it answers at once, or
// not at all).
const hostDial = 5 * time.Second

// viaHost hands the job to the state directory's host, with this
// process's environment and working directory (the job's), and the
// command resolved with them. done is false when the job is still to be
// supervised here: no host answers, or the host cannot contain the job.
func viaHost(dir string) (code int, done bool) {
	_, path, argv, err := prepare(dir)
	if err != nil {
		if werr := recordStartFail(dir, err); werr != nil {
			fmt.Printf("supervisor: %v\n", werr)
			return 1, true
		}
		return 0, true // the failure is recorded; the registry reads it
	}
	c, err := net.DialTimeout("unix", jobdir.HostSocketOf(jobdir.StateOf(dir)), hostDial)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	if err := jobdir.CheckPeer(c); err != nil {
		return 0, false
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, false
	}
	req := jobdir.HostRequest{Dir: dir, Path: path, Argv: argv, Env: os.Environ(), Cwd: cwd}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return 0, false // it read nothing: no job of ours runs
	}
	var resp jobdir.HostResponse
	if err := json.NewDecoder(io.LimitReader(c, 64<<10)).Decode(&resp); err != nil {
		// The host died while it started the job. A job it recorded is
		// the registry's to adopt; else it may have run the command, and
		// starting it again could run it twice: fail the start.
		if recorded(dir) {
			return 0, true
		}
		fmt.Printf("supervisor: the supervisor host died while it started the job: %v\n", err)
		return 1, true
	}
	switch {
	case resp.OK:
		return 0, true
	case resp.Fallback != "":
		return 0, false
	}
	fmt.Printf("supervisor: host: %s\n", resp.Error)
	return 1, true
}

// recorded reports whether the job's start (pid.json) or its failure to
// start (startfail.json) is on disk.
func recorded(dir string) bool {
	for _, f := range []string{jobdir.FilePID, jobdir.FileStartFail} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// startDetached starts this executable with argv in a session of its own,
// stdin and stdout on /dev/null and stderr appended to logPath, and
// returns what it reports (trimmed) on its fd 3 before closing it: "ok",
// or why it could not start. The process inherits this one's environment.
func startDetached(argv []string, logPath string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return "", err
	}
	defer devnull.Close()
	logf, err := statedir.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	p, err := os.StartProcess(self, argv, &os.ProcAttr{
		Files: []*os.File{devnull, devnull, logf, w},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	w.Close()
	if err != nil {
		return "", err
	}
	p.Release()
	msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	return strings.TrimSpace(string(msg)), nil
}

// reporter returns the function a detached stage says its one report
// line with (what startDetached returns): the first call writes it and
// closes report, later ones do nothing.
func reporter(report *os.File) func(string) {
	return func(s string) {
		if report != nil {
			fmt.Fprintln(report, s)
			report.Close()
			report = nil
		}
	}
}
