package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrUnsafe matches every [*Error].
var ErrUnsafe = errors.New("unsafe state directory")

// Error says which path of a state directory was refused and
// why. It matches [ErrUnsafe].
type Error struct {
	// Dir is the state directory (empty when only the path is known, as
	// in a supervisor that was handed one job's directory).
	Dir string
	// Path is what was refused: Dir itself, a directory on the way to
	// it, or a directory or file inside it.
	Path string
	// Problem says what is wrong with Path, e.g. "is owned by uid 1001,
	// not you (uid 1000)".
	Problem string
}

func (e *Error) Error() string {
	switch {
	case e.Dir == "":
		return fmt.Sprintf("%s %s; refusing it", e.Path, e.Problem)
	case e.Dir == e.Path:
		return fmt.Sprintf("state directory %s %s; refusing it", e.Path, e.Problem)
	}
	return fmt.Sprintf("state directory %s: %s %s; refusing it", e.Dir, e.Path, e.Problem)
}

func (e *Error) Unwrap() error { return ErrUnsafe }

// OpenFile opens a file in a directory checked by
// [Prepare] (rule 5): it never follows a symbolic link at path,
// and refuses, with a [*Error], anything but a regular file of
// this user with a single link. Use O_CREATE|O_EXCL for a file that must
// be new. perm applies to a file it creates.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &Error{Path: path, Problem: "is a symbolic link"}
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := CheckFile(path, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckFile checks a file found in a state directory (rule 5);
// fi is from Lstat or from the open file.
func CheckFile(path string, fi fs.FileInfo) error {
	refuse := func(format string, args ...any) error {
		return &Error{Path: path, Problem: fmt.Sprintf(format, args...)}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return refuse("is a symbolic link")
	}
	if !fi.Mode().IsRegular() {
		return refuse("is not a regular file (%s)", fi.Mode().Type())
	}
	if uid, me := OwnerOf(fi), os.Geteuid(); uid != me {
		return refuse("is owned by uid %d, not you (uid %d)", uid, me)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return refuse("has %d hard links", st.Nlink)
	}
	return nil
}

// OwnerOf is the uid that owns fi, or -1 when the platform does not say.
func OwnerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
