package agent

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Stdio is [Stream] for a process's own stdin and stdout. An *os.File
// stdin in blocking mode (a process's inherited stdin) is switched to
// non-blocking mode first, so that closing it (when the server stops)
// interrupts a pending read instead of leaving it stuck until the client
// writes again. A file that is already non-blocking is already polled by
// the runtime, and closing it already interrupts a read: it is used as it
// is (a second *os.File on a polled descriptor could not be polled, and
// would fail its reads with EAGAIN).
func Stdio(stdin io.Reader, stdout io.Writer) io.ReadWriteCloser {
	if f, ok := stdin.(*os.File); ok {
		if rc, err := f.SyscallConn(); err == nil {
			var nf *os.File
			rc.Control(func(fd uintptr) {
				flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
				if err != nil || flags&unix.O_NONBLOCK != 0 {
					return
				}
				if unix.SetNonblock(int(fd), true) == nil {
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
