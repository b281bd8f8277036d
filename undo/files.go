package undo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Every file and directory the journal makes inside its directory goes
// through the two functions below, so that one place decides what a
// private state directory is. A journal's directory holds copies of the
// workspace's files: another user who could change it could make runbox
// restore a file of theirs into the workspace, or write through a planted
// symbolic link.

// prepareDir makes dir (0700, with missing parents) if it does not exist
// and returns its absolute path. It refuses a dir that is a symbolic
// link, not a directory, not owned by the effective uid, or writable by
// its group or others: whatever made it so may have planted something.
func prepareDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("undo: state directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("undo: state directory: %w", err)
	}
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("undo: state directory: %w", err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return "", fmt.Errorf("undo: state directory: %w", err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("undo: state directory %s is a symbolic link; refusing it", abs)
	case !fi.IsDir():
		return "", fmt.Errorf("undo: state directory %s is not a directory; refusing it", abs)
	case fi.Mode().Perm()&0o022 != 0:
		return "", fmt.Errorf("undo: state directory %s is writable by its group or others (mode %04o); refusing it", abs, fi.Mode().Perm())
	}
	if uid := ownerOf(fi); uid != os.Geteuid() {
		return "", fmt.Errorf("undo: state directory %s is owned by uid %d, not you (uid %d); refusing it", abs, uid, os.Geteuid())
	}
	return abs, nil
}

// openPrivate opens a file inside a directory checked by prepareDir. It
// never follows a symbolic link at path and refuses anything but a
// regular file of this user with a single link (a hard link could make a
// write land in a file elsewhere). Use O_CREATE|O_EXCL for a file that
// must be new; perm applies to a file it creates.
func openPrivate(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("undo: %s is a symbolic link; refusing it", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkPrivate(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkPrivate(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("undo: %s is not a regular file (%s); refusing it", path, fi.Mode().Type())
	}
	if uid := ownerOf(fi); uid != os.Geteuid() {
		return fmt.Errorf("undo: %s is owned by uid %d, not you (uid %d); refusing it", path, uid, os.Geteuid())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("undo: %s has %d hard links; refusing it", path, st.Nlink)
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
