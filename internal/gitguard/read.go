package gitguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// maxRead bounds what is read of one file: git's configuration and
// pointer files are small, and a bigger one is not worth holding.
const maxRead = 4 << 20

// readRegular reads the regular file p (with follow, a link to one is
// followed): it never waits on a fifo, and refuses anything that is not a
// regular file with regular.ErrNotRegular. What a command left where git
// reads a file may be a fifo, which git would wait on too: a command could
// hang its own end, and the session's later commands, that way.
func readRegular(p string, follow bool) ([]byte, error) {
	f, err := regular.Open(p, follow)
	if err != nil {
		return nil, err
	}
	return regular.ReadAll(f, maxRead)
}

// rel is p relative to the workspace, for the calls through c.fs.
func (c *checker) rel(p string) (string, error) {
	r, err := filepath.Rel(c.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("gitguard: %s is not in the workspace", p)
	}
	return r, nil
}

// read reads the regular file p of the workspace without waiting on a fifo
// and through no link that leads out of the workspace (a directory above
// p swapped for one included).
func (c *checker) read(p string) ([]byte, error) {
	r, err := c.rel(p)
	if err != nil {
		return nil, err
	}
	f, err := regular.OpenIn(c.fs, r)
	if err != nil {
		return nil, err
	}
	return regular.ReadAll(f, maxRead)
}

// writeInside makes the new file p of the workspace holding data.
func (c *checker) writeInside(p string, perm fs.FileMode, data []byte) error {
	r, err := c.rel(p)
	if err != nil {
		return err
	}
	f, err := c.fs.OpenFile(r, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.fs.Remove(r)
	}
	return err
}

// renameInside renames the workspace's from to to, both inside it.
func (c *checker) renameInside(from, to string) error {
	rf, err := c.rel(from)
	if err != nil {
		return err
	}
	rt, err := c.rel(to)
	if err != nil {
		return err
	}
	return c.fs.Rename(rf, rt)
}

// removeInside removes the workspace's file p.
func (c *checker) removeInside(p string) {
	if r, err := c.rel(p); err == nil {
		c.fs.Remove(r)
	}
}

// scratch writes data to a private file outside the workspace, for git to
// read and edit instead of the workspace's file.
func (c *checker) scratch(data []byte) (string, error) {
	f, err := os.CreateTemp("", "runbox-gitguard-*")
	if err != nil {
		return "", fmt.Errorf("gitguard: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("gitguard: %w", err)
	}
	return f.Name(), nil
}
