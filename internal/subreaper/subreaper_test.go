package subreaper

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
)

// The test binary plays `runbox __reap`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestArgv: the subreaper's argv is the prefix, the grace in nanoseconds,
// the count of extra descriptors, the path and the command's own argv.
func TestArgv(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		extra int
		argv  []string
		want  []string
	}{
		{"no grace", 0, 0, []string{"sh", "-c", "true"}, []string{"rb", Command, "0", "0", "/bin/sh", "sh", "-c", "true"}},
		{"grace and a gate", time.Second, 1, []string{"sh"}, []string{"rb", Command, "1000000000", "1", "/bin/sh", "sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []string{"rb", Command}
			got := Argv(prefix, tt.grace, tt.extra, "/bin/sh", tt.argv)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Argv = %q; want %q", got, tt.want)
			}
			if len(prefix) != 2 {
				t.Fatalf("Argv changed its prefix to %q", prefix)
			}
		})
	}
}

// TestReadReport: the status line alone is a report of a subreaper that
// died while clearing; no status line at all is an error.
func TestReadReport(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Report
		wantErr bool
	}{
		{"complete", "code=3 signal=0\nkilled=2\n", Report{Code: 3, Killed: 2, Cleared: true}, false},
		{"signalled", "code=0 signal=15\nkilled=0\n", Report{Signal: syscall.SIGTERM, Cleared: true}, false},
		{"died while clearing", "code=1 signal=0\n", Report{Code: 1}, false},
		{"nothing", "", Report{}, true},
		{"garbage", "hello\n", Report{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var exited *Report
			got, err := ReadReport(strings.NewReader(tt.in), func(r Report) { exited = &r })
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ReadReport(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
			}
			if !tt.wantErr && (exited == nil || exited.Code != tt.want.Code || exited.Signal != tt.want.Signal) {
				t.Fatalf("exited called with %+v; want the status of %+v", exited, tt.want)
			}
		})
	}
}

// reap starts script under the subreaper (this test binary) and returns
// the running subreaper and the read end of its report.
func reap(t *testing.T, script string, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	argv := Argv([]string{os.Args[0], Command}, 0, 0, "/bin/sh", append([]string{"sh", "-c", script, "sh"}, args...))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
	})
	return cmd, r
}

// TestMain_ExitStatus: the command's exit code is reported and is the
// subreaper's own, with nothing left to kill.
func TestMain_ExitStatus(t *testing.T) {
	cmd, r := reap(t, "exit 7")
	rep, err := ReadReport(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Report{Code: 7, Cleared: true}); rep != want {
		t.Fatalf("report = %+v; want %+v", rep, want)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("subreaper exited with %v; want exit status 7", err)
	}
}

// TestMain_ReapsOrphan: a grandchild whose parent exits (a double fork)
// is reparented to the subreaper, not to init, and is killed and reaped
// once the command exits; the report counts it.
func TestMain_ReapsOrphan(t *testing.T) {
	dir := t.TempDir()
	pidFile, ppidFile := filepath.Join(dir, "pid"), filepath.Join(dir, "ppid")
	// The inner shell starts sleep and exits at once, orphaning it; the
	// outer one then records whom the orphan's parent has become.
	script := `sh -c 'sleep 1000 & echo $! >"$1"' sh "$1"
pid=$(cat "$1")
set -- "$2" $(cat /proc/$pid/stat | sed 's/^.*) //')
echo "$3" >"$1"`
	cmd, r := reap(t, script, pidFile, ppidFile)
	rep, err := ReadReport(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("subreaper: %v", err)
	}
	pid := readInt(t, pidFile)
	if ppid := readInt(t, ppidFile); ppid != cmd.Process.Pid {
		t.Fatalf("the orphan's parent was %d; want the subreaper, %d", ppid, cmd.Process.Pid)
	}
	if want := (Report{Killed: 1, Cleared: true}); rep != want {
		t.Fatalf("report = %+v; want %+v", rep, want)
	}
	// Reaped, not merely killed: the subreaper has exited, so a zombie
	// of its would now belong to init; the orphan must be gone already.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) = %v; want ESRCH", pid, err)
	}
}

// TestMain_ForwardsSignal: SIGTERM sent to the subreaper reaches the
// command; the report and the subreaper's own end say it died of it.
func TestMain_ForwardsSignal(t *testing.T) {
	cmd, r := reap(t, "exec sleep 1000")
	// The command runs once the subreaper has a child; its handlers are
	// installed before it starts one.
	testwait.Until(t, "the subreaper's child", func() bool { return len(alive(cmd.Process.Pid)) > 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReport(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Report{Signal: syscall.SIGTERM, Cleared: true}); rep != want {
		t.Fatalf("report = %+v; want %+v", rep, want)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("subreaper exited with %v; want it killed by SIGTERM", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("subreaper ended with %v; want it killed by SIGTERM", ws)
	}
}

func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
