package workspace

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsafePath is a path that would be written outside the local
	// directory, through a symbolic link, or a link that leads out.
	ErrUnsafePath = errors.New("workspace: path escapes the directory")
	// ErrProtected is a path on the protected list.
	ErrProtected = errors.New("workspace: path is protected")
	// ErrConflict is a path changed on both sides.
	ErrConflict = errors.New("workspace: conflicting change")
	// ErrTooLarge is a tree above the size limit.
	ErrTooLarge = errors.New("workspace: tree above the size limit")
	// ErrNoManifest means the task was never pushed.
	ErrNoManifest = errors.New("workspace: nothing was pushed for this task")
)

// PathError says which path was refused and why; it unwraps to one of the
// sentinels above.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("%v: %q", e.Err, e.Path) }
func (e *PathError) Unwrap() error { return e.Err }
