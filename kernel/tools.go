package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/runbox/runbox/envs"
)

// ToolFunc handles one tool call made from a cell (runbox.terminal(...),
// runbox.call(name, ...)). args is the keyword arguments as a JSON
// object. The returned value is encoded as JSON and handed to the code;
// an error raises runbox.ToolError in the code (runbox.Denied when it
// matches [envs.ErrDenied]). ctx ends when the cell ends, so a call that
// outlives its cell is cancelled.
type ToolFunc func(ctx context.Context, args json.RawMessage) (any, error)

// Tools maps a tool's name, as the code calls it, to its handler.
type Tools map[string]ToolFunc

func (t Tools) names() string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// ToolError is an error a [ToolFunc] returns to give the code a kind
// (the runbox.ToolError's .kind) and structured data (its .data).
type ToolError struct {
	Kind    string
	Message string
	Data    any
	Err     error // what it wraps, if anything
}

func (e *ToolError) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *ToolError) Unwrap() error { return e.Err }

// ErrCellFinished refuses a tool call that arrives when no cell is running.
var ErrCellFinished = errors.New("kernel: tool call outside a running cell")

// encodeToolError is err as the code sees it.
func encodeToolError(err error) *toolErrorJSON {
	var te *ToolError
	if errors.As(err, &te) {
		kind := te.Kind
		if kind == "" {
			kind = kindOf(te.Err)
		}
		return &toolErrorJSON{Kind: kind, Message: te.Error(), Data: te.Data}
	}
	return &toolErrorJSON{Kind: kindOf(err), Message: err.Error()}
}

func kindOf(err error) string {
	switch {
	case err == nil:
		return "error"
	case errors.Is(err, envs.ErrDenied):
		return "denied"
	case errors.Is(err, ErrCellFinished):
		return "cell_finished"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}

// call runs one tool call and returns the frame that answers it.
func (t Tools) call(ctx context.Context, name string, id int64, args json.RawMessage) frame {
	res := frame{Op: "result", Call: id}
	h, ok := t[name]
	if !ok {
		res.Error = &toolErrorJSON{Kind: "unknown_tool", Message: fmt.Sprintf("kernel: no tool %q (have: %s)", name, t.names())}
		return res
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := h(ctx, args)
	if err != nil {
		res.Error = encodeToolError(err)
		return res
	}
	// The value must survive encoding; say so in the code if it does not.
	if _, err := json.Marshal(v); err != nil {
		res.Error = &toolErrorJSON{Kind: "error", Message: fmt.Sprintf("kernel: tool %s: encode result: %v", name, err)}
		return res
	}
	res.OK, res.Value = true, v
	return res
}
