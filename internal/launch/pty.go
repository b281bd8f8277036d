package launch

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"

	"github.com/runbox/runbox/envs"
)

// Default terminal size, for a size whose fields are zero.
const (
	DefaultRows = 24
	DefaultCols = 80
)

// PTYSize is size with zero fields replaced by [DefaultRows] and
// [DefaultCols]. A nil size is the default size.
func PTYSize(size *envs.WindowSize) envs.WindowSize {
	var s envs.WindowSize
	if size != nil {
		s = *size
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	if s.Cols == 0 {
		s.Cols = DefaultCols
	}
	return s
}

// StartPTY starts cmd on a new terminal of size (see [PTYSize]) as its
// stdin, stdout and stderr, in a new session of which the terminal is the
// controlling one (so ^C on it reaches the command's foreground group).
// Any SysProcAttr of cmd is replaced. It returns the master side, which
// the caller owns.
func StartPTY(cmd *exec.Cmd, size *envs.WindowSize) (*os.File, error) {
	s := PTYSize(size)
	m, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: s.Rows, Cols: s.Cols}, &syscall.SysProcAttr{Setsid: true, Setctty: true})
	if err != nil {
		return nil, fmt.Errorf("launch: start on a terminal: %w", err)
	}
	return m, nil
}
