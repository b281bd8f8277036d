package undo

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrConflict matches every [*ConflictError]: an undo would overwrite
	// changes made outside any command.
	ErrConflict = errors.New("undo: changes made outside any command would be lost")
	// ErrNotKept matches every [*NotKeptError]: content an undo needs was
	// never kept (too big, unreadable, or the store was full).
	ErrNotKept = errors.New("undo: content needed is not kept")
	// ErrNothing: there is no command step to undo.
	ErrNothing = errors.New("undo: nothing to undo")
	// ErrUnknownStep: the step asked for was never made, was dropped to
	// stay under the storage bound, or was already undone.
	ErrUnknownStep = errors.New("undo: no such step")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("undo: journal closed")
)

// ConflictError says which paths, changed by which steps made outside
// any command, an undo would overwrite. It matches [ErrConflict];
// [UndoOptions].Force reverts those steps as well.
type ConflictError struct {
	Paths []string // sorted; slash-separated, relative to the root
	Steps []int64  // the outside steps that changed them, ascending
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("undo: %s changed outside any command (step %s) would be lost; undo with force to revert those too",
		listSome(e.Paths, 5), joinSeqs(e.Steps))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// NotKeptError names the paths whose earlier content an undo would need
// but the journal does not have. It matches [ErrNotKept].
type NotKeptError struct {
	Paths []string // sorted
}

func (e *NotKeptError) Error() string {
	return fmt.Sprintf("undo: the earlier content of %s is not kept; cannot restore it", listSome(e.Paths, 5))
}

func (e *NotKeptError) Unwrap() error { return ErrNotKept }

// listSome names at most n items and counts the rest, so that an error
// message stays one line however many paths it is about.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func joinSeqs(seqs []int64) string {
	s := make([]string, len(seqs))
	for i, q := range seqs {
		s[i] = fmt.Sprint(q)
	}
	return strings.Join(s, ", ")
}
