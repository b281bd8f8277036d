package launch_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// How a real process ends maps to one status: an exit code as is, a
// signal n as 128+n with Signal set, whatever the code would have been.
func TestStatus_ExitCodesAndSignals(t *testing.T) {
	tests := []struct {
		script string
		want   envs.ExitStatus
	}{
		{"exit 0", envs.ExitStatus{Code: 0}},
		{"exit 3", envs.ExitStatus{Code: 3}},
		{"exit 137", envs.ExitStatus{Code: 137}}, // a code, not a signal: the reaper knows
		{"kill -TERM $$", envs.ExitStatus{Code: 143, Signal: syscall.SIGTERM, KilledBy: "signal"}},
		{"kill -KILL $$", envs.ExitStatus{Code: 137, Signal: syscall.SIGKILL, KilledBy: "signal"}},
		{"kill -INT $$", envs.ExitStatus{Code: 130, Signal: syscall.SIGINT, KilledBy: "signal"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tt.script)
			cmd.Run()
			got, ok := launch.Status(cmd.ProcessState)
			if !ok || got != tt.want {
				t.Errorf("Status(sh -c %q) = %+v, %v; want %+v", tt.script, got, ok, tt.want)
			}
		})
	}
	if _, ok := launch.Status(nil); ok {
		t.Error("Status(nil) reported a status")
	}
}

// A code a shell reports for its child reads 128+n as the terminating
// signal n; codes of signals that do not end a process stay codes.
func TestShellStatus_Codes(t *testing.T) {
	tests := []struct {
		code int
		want envs.ExitStatus
	}{
		{0, envs.ExitStatus{Code: 0}},
		{1, envs.ExitStatus{Code: 1}},
		{127, envs.ExitStatus{Code: 127}},
		{128, envs.ExitStatus{Code: 128}},
		{130, envs.SignalStatus(syscall.SIGINT)},
		{137, envs.SignalStatus(syscall.SIGKILL)},
		{143, envs.SignalStatus(syscall.SIGTERM)},
		{128 + int(syscall.SIGCHLD), envs.ExitStatus{Code: 128 + int(syscall.SIGCHLD)}},
		{128 + int(syscall.SIGTSTP), envs.ExitStatus{Code: 128 + int(syscall.SIGTSTP)}},
		{200, envs.ExitStatus{Code: 200}},
		{255, envs.ExitStatus{Code: 255}},
	}
	for _, tt := range tests {
		if got := launch.ShellStatus(tt.code); got != tt.want {
			t.Errorf("ShellStatus(%d) = %+v; want %+v", tt.code, got, tt.want)
		}
	}
}

// Without a limit event (no container, or one that enforces none), a
// status is left as it is.
func TestLimitKilled_NoEvent(t *testing.T) {
	st := envs.SignalStatus(syscall.SIGKILL)
	if got := launch.LimitKilled(st, nil); got != st {
		t.Errorf("LimitKilled(nil container) = %+v; want %+v", got, st)
	}
	if got := launch.LimitKilled(st, termination.NewGroupContainer()); got != st {
		t.Errorf("LimitKilled(process group) = %+v; want %+v", got, st)
	}
}
