package undo

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// walker visits every entry under a directory with fstatat relative to
// its parent's descriptor, so no path is resolved twice and no symbolic
// link is ever followed: a name that is swapped for a link during the
// walk is seen as the link.
type walker struct {
	ctx  context.Context
	skip func(rel, name string) bool
	// dev is the root's device: directories on another one (mount points)
	// are visited but not entered.
	dev uint64
	// visit is called for each entry, with its parent's descriptor, before
	// the walk enters it.
	visit func(dirfd int, name, rel string, st *unix.Stat_t) error
	// unreadable is called for a directory the walk cannot list: what was
	// known under it is not known to be gone.
	unreadable func(rel string)
	// opened, when set, is called for each directory the walk enters,
	// with its descriptor, before it is listed (the watcher watches it,
	// so that nothing made in it after the listing goes unseen).
	opened func(fd int, rel string)
}

// walk visits everything under the directory open as rootfd (which it
// leaves open).
func (w *walker) walk(rootfd int) error {
	fd, err := unix.Openat(rootfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("undo: open root: %w", err)
	}
	return w.dir(fd, "")
}

// dir walks the directory open as fd, and closes it.
func (w *walker) dir(fd int, rel string) error {
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.opened != nil {
		w.opened(fd, rel)
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("undo: read directory %s: %w", rel, err)
	}
	for _, name := range names {
		if err := w.entry(fd, name, join(rel, name)); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) entry(dirfd int, name, rel string) error {
	if w.skip(rel, name) {
		return nil
	}
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since the directory was read
	}
	if err != nil {
		return fmt.Errorf("undo: stat %s: %w", rel, err)
	}
	if err := w.visit(dirfd, name, rel, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uint64(st.Dev) != w.dev {
		return nil
	}
	return w.enter(dirfd, name, rel)
}

// enter walks the directory name of the directory open as dirfd.
func (w *walker) enter(dirfd int, name, rel string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		return w.dir(fd, rel)
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		w.unreadable(rel)
		return nil
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		return nil // removed or replaced since the stat: the next checkpoint sees it
	}
	return fmt.Errorf("undo: open directory %s: %w", rel, err)
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// readlinkat reads a symbolic link's target, however long.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
