package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/internal/integration"
)

// repl is an interactive program to type into: python3 when there is
// one, else bash without its startup files.
type repl struct {
	args          []string // after "runbox run --pty"
	prompt        string
	compute, quit string // typed lines
}

func findREPL(t *testing.T) repl {
	t.Helper()
	if _, err := exec.LookPath("python3"); err == nil && exec.Command("python3", "-c", "pass").Run() == nil {
		return repl{args: []string{"--", "python3 -q"}, prompt: ">>> ", compute: "print(6*7)\n", quit: "exit()\n"}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		integration.Skip(t, "neither python3 nor bash: %v", err)
	}
	return repl{args: []string{"--", "PS1='rb> ' bash --norc --noprofile -i"}, prompt: "rb> ", compute: "echo $((6*7))\n", quit: "exit\n"}
}

func isRaw(tio unix.Termios) bool { return tio.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) == 0 }

// TestRun_PTYInteractive: with a terminal on stdin, run --pty lends it to
// the command: keys typed reach the command and its answers come back,
// the terminal is raw while it runs, and its mode is exactly as before
// once runbox has exited.
func TestRun_PTYInteractive(t *testing.T) {
	r := findREPL(t)
	tt := newTestTerminal(t, false)
	before := tt.termios(t)
	cmd := tt.startRunbox(t, append([]string{"run", "--pty"}, r.args...)...)
	tt.waitFor(t, r.prompt)
	if during := tt.termios(t); !isRaw(during) {
		t.Errorf("terminal not in raw mode while the command runs: lflag %#x", during.Lflag)
	}
	tt.typeIn(t, r.compute)
	tt.waitFor(t, "42")
	tt.typeIn(t, r.quit)
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("exit %d; terminal shows:\n%q", code, tail(tt.output(), 2000))
	}
	if after := tt.termios(t); after != before {
		t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestRun_PTYCtrlCReachesCommand: ^C typed on runbox's terminal is a key
// for the command's terminal, which interrupts the command; runbox itself
// is not interrupted (it would say so) and reports the command's status.
func TestRun_PTYCtrlCReachesCommand(t *testing.T) {
	tt := newTestTerminal(t, false)
	before := tt.termios(t)
	cmd := tt.startRunbox(t, "run", "--pty", "--", "echo ready; sleep 600")
	tt.waitFor(t, "ready")
	// A keystroke typed while runbox is still switching its terminal to
	// raw mode can be lost on a loaded machine: type ^C until it lands.
	stop := make(chan struct{})
	typed := make(chan struct{})
	go func() {
		defer close(typed)
		for {
			tt.master.Write([]byte("\x03")) // an error shows as a missing exit
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	code := waitExit(t, cmd)
	close(stop)
	<-typed
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d; want %d (the command's, killed by SIGINT)", code, 128+int(syscall.SIGINT))
	}
	if out := tt.output(); strings.Contains(out, "runbox: received") {
		t.Errorf("runbox itself took the ^C:\n%q", out)
	}
	if after := tt.termios(t); after != before {
		t.Errorf("terminal mode not restored after ^C")
	}
}

// TestRun_PTYResizeFollows: a window-size change of runbox's terminal
// reaches the command's terminal.
func TestRun_PTYResizeFollows(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		integration.Skip(t, "no bash: %v", err)
	}
	tt := newTestTerminal(t, false)
	if err := pty.Setsize(tt.master, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	cmd := tt.startRunbox(t, "run", "--pty", "--", "PS1='rb> ' bash --norc --noprofile -i")
	tt.waitFor(t, "rb> ")
	tt.typeIn(t, "stty size\n")
	tt.waitFor(t, "24 80")
	if err := pty.Setsize(tt.master, &pty.Winsize{Rows: 51, Cols: 133}); err != nil {
		t.Fatal(err)
	}
	// The resize travels by signal: ask until the command sees it.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(tt.output(), "51 133") {
		if time.Now().After(deadline) {
			t.Fatalf("the command never saw 51x133:\n%q", tail(tt.output(), 2000))
		}
		tt.typeIn(t, "stty size\n")
		time.Sleep(50 * time.Millisecond)
	}
	tt.typeIn(t, "exit\n")
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestRun_PTYSignalRestoresTerminal: SIGTERM to runbox tears the command
// down (exit 128+15) and still gives the terminal back as it was.
func TestRun_PTYSignalRestoresTerminal(t *testing.T) {
	tt := newTestTerminal(t, false)
	before := tt.termios(t)
	cmd := tt.startRunbox(t, "run", "--pty", "--", "echo ready; sleep 617")
	tt.waitFor(t, "ready")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d; want %d", code, 128+int(syscall.SIGTERM))
	}
	if after := tt.termios(t); after != before {
		t.Errorf("terminal mode not restored after SIGTERM:\nbefore %+v\nafter  %+v", before, after)
	}
	if pids := pgrep(t, "sleep 617"); len(pids) > 0 {
		t.Errorf("left behind: %v", pids)
	}
}
