package gitguard

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// errNotRegular: what a command left where git reads a file is not a
// regular file (a fifo, a device, a socket). Opening a fifo for reading
// waits for a writer that may never come, and git would wait with it: a
// command could hang its own end, and the session's later commands, that
// way.
var errNotRegular = errors.New("not a regular file")

// maxRead bounds what is read of one file: git's configuration and
// pointer files are small, and a bigger one is not worth holding.
const maxRead = 4 << 20

// readRegular reads the regular file p (a link to one is followed): it
// never waits on a fifo, and refuses anything that is not a regular file
// with errNotRegular.
func readRegular(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p, errNotRegular)
	}
	if fi.Size() > maxRead {
		return nil, fmt.Errorf("%s: over %d bytes", p, maxRead)
	}
	return io.ReadAll(io.LimitReader(f, maxRead))
}

// regular says that p is a regular file, or a link that leads to one:
// what git may be handed to read.
func regular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
