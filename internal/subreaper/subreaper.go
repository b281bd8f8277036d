package subreaper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/termination"
)

// Command is the hidden subcommand of the runbox binary that runs [Main].
const Command = "__reap"

// Report is what the subreaper says about a command once everything below
// it is gone.
type Report struct {
	Code    int            // the command's exit code (when Signal is 0)
	Signal  syscall.Signal // the signal that killed the command, or 0
	Killed  int            // leftover processes killed after it exited
	Cleared bool           // the leftovers were all cleared (Killed is final)
}

// Argv returns the argument vector that runs path (with argv as its
// arguments, argv[0] included) under the subreaper. prefix runs the runbox
// binary's subcommand (for example {"/usr/bin/runbox", Command}); grace
// is the SIGTERM grace for leftovers (0: SIGKILL at once); extra is the
// number of descriptors after the report descriptor (4, 5, ...) to hand
// to the command as 3, 4, ...
func Argv(prefix []string, grace time.Duration, extra int, path string, argv []string) []string {
	out := append([]string{}, prefix...)
	out = append(out, strconv.FormatInt(int64(grace), 10), strconv.Itoa(extra), path)
	return append(out, argv...)
}

// ReadReport reads the subreaper's report from its descriptor 3: the
// command's status, written the moment the command exits (exited, when
// non-nil, is called with it then, while leftovers may still be being
// cleared), and the count of leftovers killed, written once they are gone.
// An error means the subreaper died before reporting the status; a status
// without a count (Report.Cleared false) means it died while clearing.
func ReadReport(r io.Reader, exited func(Report)) (Report, error) {
	br := bufio.NewReader(io.LimitReader(r, 512))
	line, err := br.ReadString('\n')
	if err != nil {
		return Report{}, fmt.Errorf("subreaper: no report: %w", err)
	}
	var rep Report
	var sig int
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "code=%d signal=%d", &rep.Code, &sig); err != nil {
		return Report{}, fmt.Errorf("subreaper: bad report %q: %w", line, err)
	}
	rep.Signal = syscall.Signal(sig)
	if exited != nil {
		exited(rep)
	}
	line, err = br.ReadString('\n')
	if err == nil {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "killed=%d", &rep.Killed); err == nil {
			rep.Cleared = true
		}
	}
	return rep, nil
}

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Main runs the subreaper with the arguments after [Command] and returns
// its exit status (when the command was not killed by a signal it could
// re-raise).
func Main(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "runbox: usage: __reap GRACE EXTRA PATH ARGV0 [ARG...]")
		return 2
	}
	grace, err1 := strconv.ParseInt(args[0], 10, 64)
	extra, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || extra < 0 || extra > 64 {
		fmt.Fprintln(os.Stderr, "runbox: __reap: bad GRACE or EXTRA")
		return 2
	}
	// None of these descriptors may leak into the command under its own
	// number: the report pipe above all, which a leftover would hold open.
	syscall.CloseOnExec(3)
	report := os.NewFile(3, "report")
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := 0; i < extra; i++ {
		syscall.CloseOnExec(4 + i)
		files = append(files, os.NewFile(uintptr(4+i), "fd"))
	}
	rep, err := run(time.Duration(grace), args[2], args[3:], files, func(r Report) {
		fmt.Fprintf(report, "code=%d signal=%d\n", r.Code, int(r.Signal))
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "runbox: %v\n", err)
		return 126
	}
	fmt.Fprintf(report, "killed=%d\n", rep.Killed)
	report.Close()
	if rep.Signal != 0 {
		reraise(rep.Signal)
		return 128 + int(rep.Signal)
	}
	return rep.Code
}

// run starts the command as a child of this subreaper, waits for it,
// then clears away what it left.
func run(grace time.Duration, path string, argv []string, files []*os.File, exited func(Report)) (Report, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return Report{}, fmt.Errorf("subreaper: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	defer signal.Stop(chld)

	child, err := os.StartProcess(path, argv, &os.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		return Report{}, fmt.Errorf("subreaper: start %s: %w", path, err)
	}
	for _, f := range files[3:] {
		f.Close()
	}
	var rep Report
	for done := false; !done; {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err != nil && !errors.Is(err, syscall.EINTR):
			return Report{}, fmt.Errorf("subreaper: wait: %w", err)
		case pid == child.Pid:
			rep, done = status(ws), true
			continue
		case pid > 0:
			continue // an adopted orphan; look for more at once
		}
		select {
		case s := <-sigs:
			child.Signal(s)
		case <-chld:
		}
	}
	exited(rep)
	rep.Killed = clearAway(grace)
	rep.Cleared = true
	return rep, nil
}

func status(ws syscall.WaitStatus) Report {
	if ws.Signaled() {
		return Report{Signal: ws.Signal()}
	}
	return Report{Code: ws.ExitStatus()}
}

// clearAway tears down every remaining descendant: SIGTERM, up to grace
// for them to go, then stop-and-kill rounds until none is left; every
// exit is reaped. It returns how many processes it signalled.
func clearAway(grace time.Duration) int {
	self := os.Getpid()
	seen := map[termination.Proc]bool{}
	left := alive(self)
	if len(left) == 0 {
		reapAll()
		return 0
	}
	if grace > 0 {
		for _, p := range left {
			seen[p] = true
			p.Signal(syscall.SIGTERM)
			p.Signal(syscall.SIGCONT)
		}
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) && len(left) > 0 {
			reapNow()
			time.Sleep(10 * time.Millisecond)
			left = alive(self)
		}
	}
	// A forking tree is pinned with SIGSTOP before the kill, so no new
	// child appears between the scan and the SIGKILL.
	for round := 0; round < 64 && len(left) > 0; round++ {
		for _, p := range left {
			seen[p] = true
			p.Signal(syscall.SIGSTOP)
		}
		if more := alive(self); len(more) > len(left) {
			left = more
			continue
		}
		for _, p := range left {
			p.Signal(syscall.SIGKILL)
		}
		reapNow()
		left = alive(self)
	}
	reapAll()
	return len(seen)
}

// alive lists the living descendants of pid.
func alive(pid int) []termination.Proc {
	ds, _ := termination.Descendants(pid)
	out := ds[:0]
	for _, d := range ds {
		if d.Alive() {
			out = append(out, d)
		}
	}
	return out
}

// reapNow collects every exited child without blocking.
func reapNow() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// reapAll waits for every remaining child, bounded: they were all sent
// SIGKILL, so each goes within moments.
func reapAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return
		}
		if pid <= 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// reraise ends this process with sig, so its parent sees the command's
// own death. Signals the Go runtime keeps for itself (SIGSEGV, SIGBUS,
// ...) cannot be re-raised; the caller then exits 128+n, and the report
// line carries the signal.
func reraise(sig syscall.Signal) {
	switch sig {
	case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP:
		return
	}
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond) // delivery is asynchronous
}
