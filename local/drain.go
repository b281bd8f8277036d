package local

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// OutputCutWarning is the warning a result carries when its output was cut
// off: a process the command left running (a background child, a daemon)
// still held the command's output open [Options.DrainDelay] after the
// command exited, so what it wrote after that is not in the result.
// Everything written before the cut is.
const OutputCutWarning = "output cut: a process the command left running still held its output open after the command exited; what it wrote after that is not included"

// maxCutRead bounds what is still read, without waiting, once the output
// is cut: what the pipe held at that moment and whatever keeps arriving
// while it is read, but never more than this, so a writer faster than the
// reader cannot hold the call.
const maxCutRead = 1 << 20

// drain waits for the output copiers once the command has exited. When
// they are not done after DrainDelay, the output is cut: each copier reads,
// without waiting, what its pipe still holds and stops. The cut never
// drops what the command wrote: on a loaded host the copier may not have
// run at all since the command exited (it was not scheduled, or its wake-up
// from the poller came late), and the pipe then holds the command's whole
// output. Only a writer that still holds the pipe loses what it writes
// after the cut, and the result then carries OutputCutWarning.
func (p *process) drain() {
	copied := make(chan struct{})
	go func() { p.copiers.Wait(); close(copied) }()
	t := time.NewTimer(p.env.opts.DrainDelay)
	defer t.Stop()
	select {
	case <-copied:
	case <-t.C:
		p.cutReadEnds()
		<-copied
	}
	if p.outputCut.Load() {
		p.warnings = append(p.warnings, OutputCutWarning)
	}
}

// cutReadEnds stops the copiers: a read deadline in the past wakes a
// blocked Read, and copyOut then reads what is left without waiting. A
// read end that takes no deadline (a terminal in blocking mode) is closed
// instead, the only way left to wake its reader; what it still held is
// then lost, and the output counts as cut.
func (p *process) cutReadEnds() {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	for _, f := range p.readEnds {
		if err := f.SetReadDeadline(time.Unix(1, 0)); err != nil {
			p.outputCut.Store(true)
			f.Close()
		}
	}
}

// copyOut copies f to w until end of file or until the output is cut (see
// cutReadEnds). held reports that a writer still held the pipe when the
// copy stopped, so that later output is missing.
func copyOut(w io.Writer, f *os.File) (held bool, err error) {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return false, err
			}
		}
		switch {
		case rerr == nil:
		case rerr == io.EOF || isEIO(rerr):
			return false, nil
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			return readLeft(w, f, buf)
		default:
			return false, rerr
		}
	}
}

// readLeft reads what f holds, without waiting, up to end of file (no
// writer left: nothing is missing) or an empty pipe (a writer still holds
// it). It reads through Control, which unlike Read ignores the expired
// deadline; the descriptor is non-blocking, as every pipe the runtime
// polls is.
func readLeft(w io.Writer, f *os.File, buf []byte) (held bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return true, err
	}
	for total := 0; total < maxCutRead; {
		var n int
		var rerr error
		if err := rc.Control(func(fd uintptr) {
			for {
				n, rerr = unix.Read(int(fd), buf)
				if rerr != unix.EINTR {
					return
				}
			}
		}); err != nil {
			return true, err
		}
		switch {
		case rerr == unix.EAGAIN:
			return true, nil
		case rerr == unix.EIO: // a terminal whose other side is gone
			return false, nil
		case rerr != nil:
			return true, rerr
		case n == 0:
			return false, nil
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return false, err
		}
		total += n
	}
	return true, nil
}
