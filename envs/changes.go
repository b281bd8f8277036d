package envs

import (
	"context"

	"github.com/runbox/runbox/undo"
)

// CapUndo is the capability to record what each command changes in the
// workspace and to put it back (package undo): active where runbox keeps
// the journal itself (on this machine) or through its agent in the
// environment; unsupported elsewhere.
const CapUndo Capability = "undo"

// ChangeJournal records the file changes of the commands run over one
// workspace and puts them back. *undo.Journal is one, kept on this
// machine; an environment with runbox's agent in it offers one kept there
// ([Journaler]).
type ChangeJournal interface {
	// Begin takes a checkpoint before a command labelled label.
	Begin(ctx context.Context, label string) (ChangeRecorder, error)
	// Steps lists the journal's steps, oldest first.
	Steps(ctx context.Context) ([]undo.Step, error)
	// Undo restores the workspace to an earlier checkpoint.
	Undo(ctx context.Context, o undo.UndoOptions) (*undo.Undone, error)
	// Close releases the journal; what it recorded stays.
	Close() error
}

// ChangeRecorder is one command's place in a [ChangeJournal].
type ChangeRecorder interface {
	// End takes the checkpoint after the command and says what changed.
	End(ctx context.Context) (*undo.Record, error)
}

// Journaler is an [Environment] that keeps a [ChangeJournal] inside
// itself (through runbox's agent), for the workspace directory root.
type Journaler interface {
	Journal(ctx context.Context, root string, o undo.Options) (ChangeJournal, error)
}

// ChangeReporter is a [Process] that says what it changed in the
// workspace once Wait returned (nil when nothing was recorded).
type ChangeReporter interface {
	Changes() *undo.Record
}

// HostJournal adapts an *undo.Journal kept on this machine to a
// [ChangeJournal].
func HostJournal(j *undo.Journal) ChangeJournal { return hostJournal{j} }

type hostJournal struct{ *undo.Journal }

func (h hostJournal) Begin(ctx context.Context, label string) (ChangeRecorder, error) {
	c, err := h.Journal.Begin(ctx, label)
	if err != nil {
		return nil, err
	}
	return c, nil
}
