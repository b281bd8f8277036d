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
	"io"
	"os"
	"syscall"
)

// ErrNotRegular: the path is a fifo, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: the file holds more than the reader takes.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the regular file p, which must not be a link, whole, up
// to max bytes: a file a command could replace (runbox's own session
// files, in a directory the command writes) by a link to a secret, by
// /dev/zero or by a fifo gives an error, never the secret, an endless
// read or a wait.
func ReadFile(p string, max int64) ([]byte, error) {
	f, err := Open(p, false)
	if err != nil {
		return nil, err
	}
	return ReadAll(f, max)
}

// ReadAll reads the open file f whole, up to max bytes, and closes it:
// more than max is ErrTooLarge.
func ReadAll(f *os.File, max int64) ([]byte, error) {
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", f.Name(), ErrTooLarge, max)
	}
	return b, nil
}

// Open opens the regular file p for reading. With follow false a link in
// p's place is refused too (the open fails with ELOOP).
func Open(p string, follow bool) (*os.File, error) {
	flags := readFlags
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	return checked(os.OpenFile(p, flags, 0))
}

// OpenIn opens the regular file name of root for reading, as Open does,
// through no link that leads out of root.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	return checked(root.OpenFile(name, readFlags, 0))
}

// readFlags open for reading without waiting for a fifo's writer.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// checked refuses f, just opened, unless it is a regular file.
func checked(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", f.Name(), ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
