package workspace

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errNotRegular: a path the scan saw as a regular file is something else
// now (a fifo, a device). Opening a fifo for reading waits for a writer,
// so a command running beside a sync could otherwise hang it by swapping
// a file for one.
var errNotRegular = errors.New("not a regular file")

// openRegular opens the regular file p for reading without waiting on
// whatever may have replaced it since it was looked at, and without
// following a link put in its place.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("workspace: %s: %w", p, errNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
