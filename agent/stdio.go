package agent

import (
	"io"
	"os"
	"syscall"
)

// Stdio is [Stream] for a process's own stdin and stdout. An *os.File
// stdin is switched to non-blocking mode first, so that closing it (when
// the server stops) interrupts a pending read instead of leaving it stuck
// until the client writes again.
func Stdio(stdin io.Reader, stdout io.Writer) io.ReadWriteCloser {
	if f, ok := stdin.(*os.File); ok {
		if rc, err := f.SyscallConn(); err == nil {
			var nf *os.File
			rc.Control(func(fd uintptr) {
				if syscall.SetNonblock(int(fd), true) == nil {
					nf = os.NewFile(fd, f.Name())
				}
			})
			if nf != nil {
				stdin = nf
			}
		}
	}
	return Stream(stdin, stdout)
}
