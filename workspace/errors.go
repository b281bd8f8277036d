package workspace

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsafePath is a path that would be written outside the local
	// directory or through a symbolic link, or a link that, once the
	// links on its way are followed, leads out or into a refused path.
	ErrUnsafePath = errors.New("workspace: path escapes the directory")
	// ErrRefused is a path that git, a hook manager or a shell here would
	// act on (.git in any form, .gitmodules, hooks, shell start-up
	// files, a crafted git directory): Apply never writes it.
	ErrRefused = errors.New("workspace: path git or a shell would act on")
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
