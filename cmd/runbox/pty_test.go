package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/runbox/runbox/internal/integration"
)

// testTerminal is a pseudo-terminal for tests: slave is the terminal runbox
// sees; what is written to it is collected from the master.
type testTerminal struct {
	master, slave *os.File
	mu            sync.Mutex
	buf           bytes.Buffer
	done          chan struct{}
}

// newTestTerminal opens a pseudo-terminal. raw turns off the slave's
// output processing, so the bytes collected are the bytes written.
func newTestTerminal(t *testing.T, raw bool) *testTerminal {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		integration.Skip(t, "no pseudo-terminal: %v", err)
	}
	if raw {
		if _, err := term.MakeRaw(int(s.Fd())); err != nil {
			t.Fatal(err)
		}
	}
	tt := &testTerminal{master: m, slave: s, done: make(chan struct{})}
	go func() {
		defer close(tt.done)
		b := make([]byte, 64<<10)
		for {
			n, err := m.Read(b)
			tt.mu.Lock()
			tt.buf.Write(b[:n])
			tt.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// With no slave side left open, a read of the master fails (EIO)
		// even where closing the master would not interrupt it.
		s.Close()
		m.Close()
		select {
		case <-tt.done:
		case <-time.After(10 * time.Second):
			t.Error("the terminal's reader did not end: something still holds the terminal")
		}
	})
	return tt
}

// output is everything read from the terminal so far.
func (tt *testTerminal) output() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.buf.String()
}

// waitFor polls until the output contains want, and fails after a bound
// that only a hang reaches.
func (tt *testTerminal) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := tt.output()
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed %q; it shows:\n%q", want, tail(out, 2000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForAny polls until the output contains one of wants.
func (tt *testTerminal) waitForAny(t *testing.T, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := tt.output()
		for _, w := range wants {
			if strings.Contains(out, w) {
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed any of %q; it shows:\n%q", wants, tail(out, 2000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (tt *testTerminal) typeIn(t *testing.T, s string) {
	t.Helper()
	if _, err := tt.master.Write([]byte(s)); err != nil {
		t.Fatalf("typing %q: %v", s, err)
	}
}

// termios is the terminal's mode, to compare before and after.
func (tt *testTerminal) termios(t *testing.T) unix.Termios {
	t.Helper()
	st, err := unix.IoctlGetTermios(int(tt.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *st
}

// startRunbox runs this test binary as runbox on the terminal, as the
// leader of a session whose controlling terminal it is (as a login shell
// runs what one types), with a configuration of its own.
func (tt *testTerminal) startRunbox(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "HOME="+home, "XDG_CONFIG_HOME="+home, "RUNBOX_CONFIG=", "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tt.slave, tt.slave, tt.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// waitExit waits for cmd with a bound that only a hang reaches, and
// returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("runbox did not exit")
		return -1
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
