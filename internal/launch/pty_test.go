package launch_test

import (
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// A command started on a terminal sees it as its controlling terminal,
// of the requested size, with zero fields defaulting to 24x80.
func TestStartPTY_SizeAndSession(t *testing.T) {
	tests := []struct {
		size *envs.WindowSize
		want string
	}{
		{nil, "24 80"},
		{&envs.WindowSize{Rows: 40}, "40 80"},
		{&envs.WindowSize{Cols: 100}, "24 100"},
		{&envs.WindowSize{Rows: 10, Cols: 33}, "10 33"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			// stty size reads the controlling terminal through /dev/tty.
			cmd := exec.Command("/bin/sh", "-c", "stty size </dev/tty")
			m, err := launch.StartPTY(cmd, tt.size)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var b strings.Builder
			io.Copy(&b, m) // ends with EIO once the command has exited
			cmd.Wait()
			if got := strings.TrimSpace(b.String()); got != tt.want {
				t.Errorf("stty size on StartPTY(%+v) = %q; want %q", tt.size, got, tt.want)
			}
		})
	}
}
