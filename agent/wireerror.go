package agent

import (
	"errors"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

// wireError carries an error across the stream, keeping the envs sentinel
// or undo sentinel (or type) it matched so errors.Is and errors.As work on the far side.
type wireError struct {
	Kind string `json:"kind,omitempty"`
	Msg  string `json:"msg"`
	PIDs []int  `json:"pids,omitempty"`
}

var kinds = []struct {
	name string
	err  error
}{
	{"not_found", envs.ErrNotFound},
	{"closed", envs.ErrClosed},
	{"unsupported", envs.ErrUnsupported},
	{"denied", envs.ErrDenied},
	{"bad_command", envs.ErrBadCommand},
	{"timeout", envs.ErrTimeout},
	// A change journal's refusals, which callers tell apart (undo says
	// why it would not, and how to insist).
	{"undo_conflict", undo.ErrConflict},
	{"undo_not_kept", undo.ErrNotKept},
	{"undo_nothing", undo.ErrNothing},
	{"undo_unknown_step", undo.ErrUnknownStep},
	{"undo_closed", undo.ErrClosed},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var se *envs.SurvivorsError
	if errors.As(err, &se) {
		w.Kind, w.PIDs = "survivors", se.PIDs
		return w
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			w.Kind = k.name
			break
		}
	}
	return w
}

// RemoteError is an error that happened inside the agent. It unwraps to
// the envs sentinel or type the original matched.
type RemoteError struct {
	Msg  string
	kind error
}

func (e *RemoteError) Error() string { return "agent: remote: " + e.Msg }
func (e *RemoteError) Unwrap() error { return e.kind }

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	if w.Kind == "survivors" {
		return &RemoteError{Msg: w.Msg, kind: &envs.SurvivorsError{PIDs: w.PIDs}}
	}
	re := &RemoteError{Msg: w.Msg}
	for _, k := range kinds {
		if k.name == w.Kind {
			re.kind = k.err
		}
	}
	return re
}
