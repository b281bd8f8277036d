//go:build !linux

package inherit

import "syscall"

// CloseOnExec marks every descriptor of this process above 2
// close-on-exec, as far as it can find them.
func CloseOnExec() error {
	var lim syscall.Rlimit
	n := 1024
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < 1<<16 {
		n = int(lim.Cur)
	}
	for fd := 3; fd < n; fd++ {
		syscall.CloseOnExec(fd)
	}
	return nil
}
