package launch_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// gated starts `echo child` held at a barrier, with its stdout on a pipe
// the test also writes to. It returns the started command, the barrier and
// the pipe's write end (for the test's own line).
func gated(t *testing.T) (*exec.Cmd, *launch.Barrier, *os.File, *os.File) {
	t.Helper()
	if _, err := os.Stat(launch.HoldShell); err != nil {
		t.Skip("no " + launch.HoldShell)
	}
	g, err := launch.NewBarrier()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	argv := launch.HoldArgv(launch.HoldShell, []string{"sh", "-c", "echo child"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = w
	cmd.ExtraFiles = []*os.File{g.File()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	g.Started()
	return cmd, g, r, w
}

// output waits for cmd, closes the test's copy of the write end and
// returns everything written to the pipe.
func output(t *testing.T, cmd *exec.Cmd, r, w *os.File) (string, int) {
	t.Helper()
	cmd.Wait()
	w.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), cmd.ProcessState.ExitCode()
}

// A held child runs nothing before its barrier opens. Each row holds the
// child (which would print "child" at once if it ran) and ends the barrier
// its own way; the output says whether, and when, it ran.
func TestGate_HoldsChildUntilOpened(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := gone.Process.Pid // reaped: adding it to a container fails
	tests := []struct {
		name     string
		end      func(t *testing.T, g *launch.Barrier, pid int) error
		wantOut  string
		wantCode int
		wantErr  error
	}{
		{
			name:    "opened after the parent's line",
			end:     func(t *testing.T, g *launch.Barrier, pid int) error { return g.Open() },
			wantOut: "parent\nchild\n",
		},
		{
			name:     "closed unopened",
			end:      func(t *testing.T, g *launch.Barrier, pid int) error { g.Close(); return nil },
			wantOut:  "parent\n",
			wantCode: launch.ExitBarrierClosed,
		},
		{
			name: "admitted to its container",
			end: func(t *testing.T, g *launch.Barrier, pid int) error {
				return g.Admit(context.Background(), termination.NewGroupContainer(), pid, true)
			},
			wantOut: "parent\nchild\n",
		},
		{
			name: "required placement fails",
			end: func(t *testing.T, g *launch.Barrier, pid int) error {
				return g.Admit(context.Background(), termination.NewGroupContainer(), deadPID, true)
			},
			wantOut:  "parent\n",
			wantCode: launch.ExitBarrierClosed,
			wantErr:  launch.ErrNotContained,
		},
		{
			name: "optional placement fails",
			end: func(t *testing.T, g *launch.Barrier, pid int) error {
				return g.Admit(context.Background(), termination.NewGroupContainer(), deadPID, false)
			},
			wantOut: "parent\nchild\n",
			wantErr: launch.ErrNotContained,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, g, r, w := gated(t)
			if _, err := w.WriteString("parent\n"); err != nil {
				t.Fatal(err)
			}
			err := tt.end(t, g, cmd.Process.Pid)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("ending the barrier = %v; want %v", err, tt.wantErr)
			}
			out, code := output(t, cmd, r, w)
			if out != tt.wantOut || code != tt.wantCode {
				t.Errorf("child output = %q, exit %d; want %q, exit %d", out, code, tt.wantOut, tt.wantCode)
			}
		})
	}
}

// A parent that goes away without opening the barrier (its end closes with
// it) leaves the child exiting without running anything.
func TestGate_ParentGoneRunsNothing(t *testing.T) {
	cmd, g, r, w := gated(t)
	g.Close() // what the kernel does to the write end when the parent dies
	out, code := output(t, cmd, r, w)
	if out != "" || code != launch.ExitBarrierClosed {
		t.Errorf("child output = %q, exit %d; want nothing, exit %d", out, code, launch.ExitBarrierClosed)
	}
}
