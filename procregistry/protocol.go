package procregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runbox/runbox/envs"
)

// request is one call over a [Server]'s socket: one JSON object per
// connection, answered by zero or more data frames and one final frame.
type request struct {
	Op string `json:"op"`
	// As and Token prove the call acts for owner As (see "Owners").
	As       string        `json:"as,omitempty"`
	Token    string        `json:"token,omitempty"`
	ID       string        `json:"id,omitempty"`
	Owner    string        `json:"owner,omitempty"`
	Start    *StartRequest `json:"start,omitempty"`
	Offset   int64         `json:"offset,omitempty"`
	Limit    int           `json:"limit,omitempty"`
	Lines    int           `json:"lines,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	Data     []byte        `json:"data,omitempty"`
	Note     string        `json:"note,omitempty"`
	Consumer string        `json:"consumer,omitempty"`
	Wait     bool          `json:"wait,omitempty"`
	Seq      int64         `json:"seq,omitempty"`
	Lifetime Lifetime      `json:"lifetime,omitempty"`
}

// frame is one line of an answer. Data frames carry Data (follow); the
// last frame carries Result or Error.
type frame struct {
	Data   []byte          `json:"data,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError carries an error and the sentinel it matched, so the client
// gives callers something errors.Is can test.
type wireError struct {
	Msg       string `json:"msg"`
	Kind      string `json:"kind,omitempty"`
	Survivors []int  `json:"survivors,omitempty"`
}

var errKinds = []struct {
	kind string
	err  error
}{
	{"not_found", envs.ErrNotFound},
	{"ambiguous", ErrAmbiguous},
	{"closed", envs.ErrClosed},
	{"bad_command", envs.ErrBadCommand},
	{"denied", envs.ErrDenied},
	{"busy", ErrBusy},
	{"too_large", ErrRequestTooLarge},
	{"overloaded", ErrOverloaded},
	{"unsafe_state_dir", ErrUnsafeStateDir},
}

func toWire(err error) *wireError {
	w := &wireError{Msg: err.Error()}
	var se *envs.SurvivorsError
	if errors.As(err, &se) {
		w.Kind, w.Survivors = "survivors", se.PIDs
		return w
	}
	for _, k := range errKinds {
		if errors.Is(err, k.err) {
			w.Kind = k.kind
			break
		}
	}
	return w
}

// remoteError is an error that came over the socket.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func (w *wireError) err() error {
	if w.Kind == "survivors" {
		return fmt.Errorf("%s: %w", w.Msg, &envs.SurvivorsError{PIDs: w.Survivors})
	}
	for _, k := range errKinds {
		if k.kind == w.Kind {
			return &remoteError{msg: w.Msg, kind: k.err}
		}
	}
	return &remoteError{msg: w.Msg}
}
