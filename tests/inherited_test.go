package tests

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSandbox_InheritedDescriptorReachesNoCommand protects the promise
// that nothing runbox's caller left open is a way past the sandbox: with
// a descriptor to a file outside the workspace open as fd 9 (a harness's
// log, say), a command that writes to fd 9 writes nothing there, through
// runbox run, start (a job of the daemon), code and serve over stdio, with
// the gate out of the way; as root and as an unprivileged user. The
// control: a shell started the same way writes through it.
func TestSandbox_InheritedDescriptorReachesNoCommand(t *testing.T) {
	const logFD = 9 // above the descriptors runbox hands a shell
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			canary := filepath.Join(filepath.Dir(home), "harness.log")
			if err := os.WriteFile(canary, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chmod(canary, 0o666)
			log, err := os.OpenFile(canary, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			written := func() string { b, _ := os.ReadFile(canary); return string(b) }
			withLog := func(cmd *exec.Cmd) *exec.Cmd {
				cmd.ExtraFiles = make([]*os.File, logFD-2) // fd 3 up to logFD-1 closed
				cmd.ExtraFiles[logFD-3] = log
				cmd.Dir = home
				return cmd
			}

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			control := exec.CommandContext(ctx, "sh", "-c", "echo control >&"+strconv.Itoa(logFD))
			if u.switched {
				control.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
			}
			if out, err := withLog(control).CombinedOutput(); err != nil || written() != "control\n" {
				t.Fatalf("the control wrote %q (%v %s): the attack is not real", written(), err, out)
			}

			attack := "echo pwned-$0 >&" + strconv.Itoa(logFD) + "; echo tried"
			for _, args := range [][]string{
				{"--yolo", "run", "--", attack},
				{"--yolo", "code", "import os\nos.write(" + strconv.Itoa(logFD) + ", b'pwned-code\\n')"},
			} {
				out, _ := withLog(u.command(ctx, env, args...)).CombinedOutput()
				t.Logf("runbox %s: %s", args[1], out)
			}
			out, err := withLog(u.command(ctx, env, "--yolo", "start", "--", attack)).Output()
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if wout, err := withLog(u.command(ctx, env, "wait", "--timeout", "60s", strings.TrimSpace(string(out)))).CombinedOutput(); err != nil {
				t.Logf("wait: %v %s", err, wout)
			}

			serve := withLog(u.command(ctx, env, "serve"))
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "stock", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: serve, TerminateDuration: time.Minute}, nil)
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": attack}}); err != nil {
				t.Errorf("terminal: %v", err)
			}
			cs.Close()

			if got := written(); got != "control\n" {
				t.Errorf("commands wrote through the inherited descriptor:\n%s", got)
			}
		})
	}
}

// TestSandbox_CallersTerminalTakesNoInput protects the promise that a
// command cannot type into the terminal runbox was started from (TIOCSTI,
// which this kernel may allow: dev.tty.legacy_tiocsti), for the user's
// shell to run outside the sandbox once runbox exits: with runbox's
// standard streams on a terminal, a command that opens that terminal by
// name and pushes a line into its input leaves nothing there. The
// control: the same command with the sandbox off does.
func TestSandbox_CallersTerminalTakesNoInput(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	inject := func(t *testing.T, sandbox string) string {
		master, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		defer master.Close()
		defer tty.Close()
		go io.Copy(io.Discard, master) // what runbox writes to the terminal
		attack := `python3 -c 'import fcntl,termios,os
fd=os.open("` + tty.Name() + `", os.O_RDWR|os.O_NOCTTY)
for c in b"touch /tmp/typed\n": fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))'`
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, runboxBin, "--yolo", "--sandbox", sandbox, "run", "--", attack)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Run()
		// What the terminal holds for the next reader: the user's shell.
		fd := int(tty.Fd()) // blocking: once, before the flag is set
		if err := syscall.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, _ := syscall.Read(fd, buf)
		return string(buf[:max(n, 0)])
	}
	if got := inject(t, "off"); !strings.Contains(got, "touch /tmp/typed") {
		t.Fatalf("the control typed %q into the terminal: the attack is not real here", got)
	}
	if got := inject(t, "workspace"); got != "" {
		t.Errorf("a confined command typed %q into the caller's terminal", got)
	}
}
