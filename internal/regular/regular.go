// Package regular opens files that something else may have replaced since
// they were looked at, without waiting on what took their place.
//
// A command can leave a fifo where runbox (unconfined) later reads a file
// of the workspace: git's configuration, a file to hash or send. Opening a
// fifo for reading waits for a writer that may never come, and runbox's
// end of the command, or a sync, would wait with it. [Open] opens without
// waiting and refuses anything that is not a regular file.
package regular

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrNotRegular: the path is a fifo, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file p for reading. With follow false a link in
// p's place is refused too (the open fails with ELOOP).
func Open(p string, follow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(p, flags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", p, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
