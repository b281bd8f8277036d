package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// wirePTY prepares PTY mode: the command gets a terminal of the requested
// size as stdin, stdout and stderr, in a session of its own.
func (p *process) wirePTY(c envs.Command, out *envs.Capture) error {
	size := launch.PTYSize(c.PTY)
	p.ptySize = &size
	p.ptyIn = c.Stdin
	p.ptyOut = out
	return nil
}

// ptyStarted wires the terminal's master side once the command runs.
func (p *process) ptyStarted() {
	m := p.ptyFile
	if p.ptyOut != nil {
		p.copyFrom(m, p.ptyOut, nil)
	} else {
		p.output = p.sink(m, nil)
	}
	switch {
	case p.ptyIn != nil:
		in := p.ptyIn
		// Not one of p.copiers: drain must not wait for a reader that
		// never ends. This goroutine ends when in does, or when a write
		// fails because the master was closed at release.
		p.pending = append(p.pending, func() {
			go func() {
				io.Copy(m, in)
				m.Write([]byte{4}) // ^D: end of input for the terminal's reader
			}()
		})
	case p.ptyOut == nil:
		p.stdin = ptyStdin{m}
	}
}

// ptyStdin writes to the terminal; Close sends end-of-file (^D) rather than
// closing the master, which would hang up the terminal.
type ptyStdin struct{ m io.Writer }

func (s ptyStdin) Write(b []byte) (int, error) { return s.m.Write(b) }
func (s ptyStdin) Close() error {
	_, err := s.m.Write([]byte{4})
	return err
}

// Resize changes the terminal size. It goes through the master's
// SyscallConn, which holds the descriptor against a concurrent close at
// release (pty.Setsize reads it through Fd, which does not), so resizing
// while the command ends is safe: it then fails with os.ErrClosed.
func (p *process) Resize(_ context.Context, size envs.WindowSize) error {
	if p.ptyFile == nil {
		return fmt.Errorf("local: resize: no terminal: %w", envs.ErrUnsupported)
	}
	rc, err := p.ptyFile.SyscallConn()
	if err != nil {
		return fmt.Errorf("local: resize: %w", err)
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
	if err = cmp.Or(err, ioErr); err != nil {
		return fmt.Errorf("local: resize: %w", err)
	}
	return nil
}

// isEIO reports the error a PTY master returns once the slave side is gone.
func isEIO(err error) bool { return errors.Is(err, syscall.EIO) }
