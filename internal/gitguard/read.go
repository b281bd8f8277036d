package gitguard

import (
	"fmt"
	"io"
	"os"

	"github.com/runbox/runbox/internal/regular"
)

// maxRead bounds what is read of one file: git's configuration and
// pointer files are small, and a bigger one is not worth holding.
const maxRead = 4 << 20

// readRegular reads the regular file p (a link to one is followed): it
// never waits on a fifo, and refuses anything that is not a regular file
// with regular.ErrNotRegular. What a command left where git reads a file
// may be a fifo, which git would wait on too: a command could hang its own
// end, and the session's later commands, that way.
func readRegular(p string) ([]byte, error) {
	f, err := regular.Open(p, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxRead {
		return nil, fmt.Errorf("%s: over %d bytes", p, maxRead)
	}
	return io.ReadAll(io.LimitReader(f, maxRead))
}

// isRegular says that p is a regular file, or a link that leads to one:
// what git may be handed to read.
func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
