package procregistry

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testwait"
)

// A PTY job sees a terminal, takes input through it, and its output
// (with the terminal's echo) lands in the log.
func TestSupervise_PTY(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: `test -t 0 && echo tty; read x; echo "got $x"`, PTY: &envs.WindowSize{Rows: 24, Cols: 80}})
	testwait.Within(t, 10*time.Second, "tty line", func() bool { return strings.Contains(logText(t, r, in.ID), "tty") })
	if err := r.Submit(t.Context(), in.ID, "abc"); err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, in.ID)
	if got.Exit == nil || got.Exit.Code != 0 {
		t.Fatalf("PTY job: %+v", got)
	}
	if s := logText(t, r, in.ID); !strings.Contains(s, "got abc") {
		t.Errorf("log = %q", s)
	}
}

// Writes reach a pipe job's stdin; close sends EOF; after the job ends,
// a write is refused with an error.
func TestSupervise_StdinWriteClose(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "cat"})
	if err := r.Write(t.Context(), in.ID, []byte("part1 ")); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit(t.Context(), in.ID, "part2"); err != nil {
		t.Fatal(err)
	}
	if err := r.CloseStdin(t.Context(), in.ID); err != nil {
		t.Fatal(err)
	}
	waitDone(t, r, in.ID)
	if s := logText(t, r, in.ID); s != "part1 part2\n" {
		t.Errorf("log = %q", s)
	}
	if err := r.Write(t.Context(), in.ID, []byte("late")); err == nil {
		t.Error("write to a finished job succeeded")
	}
}

// procCPU is a process's CPU time (utime+stime, in clock ticks) and its
// context switches (voluntary and not, summed over its threads).
func procCPU(t *testing.T, pid int) (ticks, switches int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.Atoi(f[11]) // field 14
	st, _ := strconv.Atoi(f[12]) // field 15
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				switches += n
			}
		}
	}
	return ut + st, switches
}

// The supervisor of an idle job sleeps in the kernel: over two seconds
// it is not scheduled at all (no timer, no polling of /proc). Breaks if
// anything in it wakes up periodically.
func TestSupervise_IdleNoWakeups(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "sleep 30"})
	sup := jobPIDs(t, r, in.ID).Supervisor
	// Let the start settle (the registry's wait request is answered by a
	// goroutine that then blocks; a host gives back the memory the start
	// touched half a second after it).
	testwait.Within(t, 20*time.Second, "the supervisor idle", func() bool {
		_, a := procCPU(t, sup.PID)
		<-time.After(time.Second) // observation window, bounded by eventually
		_, b := procCPU(t, sup.PID)
		return a == b
	})
	ticks0, sw0 := procCPU(t, sup.PID)
	<-time.After(2 * time.Second) // the observation window itself
	ticks1, sw1 := procCPU(t, sup.PID)
	if sw1-sw0 > 2 || ticks1-ticks0 > 1 {
		t.Errorf("idle supervisor over 2 s: %d context switches, %d CPU ticks; want ≤ 2 and ≤ 1", sw1-sw0, ticks1-ticks0)
	}
}

// A job starts with the default action for every signal its supervisor
// catches or once ignored (HUP, INT, QUIT, PIPE): an ignored signal would
// be inherited, and ^C on a terminal job would do nothing.
func TestSupervise_SignalsNotIgnoredInJob(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "grep SigIgn /proc/self/status"})
	waitDone(t, r, in.ID)
	text := strings.TrimSpace(strings.TrimPrefix(logText(t, r, in.ID), "SigIgn:"))
	mask, err := strconv.ParseUint(text, 16, 64)
	if err != nil {
		t.Fatalf("log = %q", text)
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE} {
		if mask&(1<<(uint(sig)-1)) != 0 {
			t.Errorf("%v is ignored in the job (SigIgn %s)", sig, text)
		}
	}
}

// How a job ended is reported the same way however deep the signal hit:
// a command killed by a signal is that signal (and 128+n), a plain exit
// is its code.
func TestSupervise_ExitStatus(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	for _, tc := range []struct {
		shell  string
		code   int
		signal syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"kill -USR1 $$", 128 + int(syscall.SIGUSR1), syscall.SIGUSR1},
		{"sh -c 'kill -KILL $$'; exit $?", 128 + int(syscall.SIGKILL), syscall.SIGKILL},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			got := waitDone(t, r, start(t, r, StartRequest{Shell: tc.shell}).ID)
			if got.Exit == nil || got.Exit.Code != tc.code || got.Exit.Signal != tc.signal {
				t.Errorf("job %q ended %+v; want code %d, signal %v", tc.shell, got.Exit, tc.code, tc.signal)
			}
		})
	}
}

// ^C typed on a terminal job interrupts its command (it used to inherit
// SIGINT ignored from its supervisor), and the job ends with SIGINT.
func TestSupervise_PTYInterrupt(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "echo ready; exec sleep 60", PTY: &envs.WindowSize{Rows: 24, Cols: 80}})
	testwait.Within(t, 10*time.Second, "ready", func() bool { return strings.Contains(logText(t, r, in.ID), "ready") })
	if err := r.Write(t.Context(), in.ID, []byte{3}); err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, in.ID)
	if got.Status != StatusExited || got.Exit == nil || got.Exit.Signal != syscall.SIGINT {
		t.Errorf("after ^C: %+v (exit %+v); want ended by SIGINT", got, got.Exit)
	}
}
