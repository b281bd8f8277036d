package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/undo"
)

// UndoArgs are the undo tool's arguments.
type UndoArgs struct {
	To    int64 `json:"to,omitempty" jsonschema:"restore the workspace to its state before this step (a command result's changes.step), undoing every step after it too; absent or 0: before the last command"`
	Force bool  `json:"force,omitempty" jsonschema:"also revert edits made outside any command (by the user) to the same paths; without it such an edit makes undo refuse, naming the paths"`
	List  bool  `json:"list,omitempty" jsonschema:"list the recorded steps instead of undoing"`
}

// StepList is the undo tool's structured result with list.
type StepList struct {
	Steps []undo.Step `json:"steps"`
}

func (s *Server) addUndoTool() error {
	sc, err := schemaFor[UndoArgs](func(p map[string]*jsonschema.Schema) {
		p["to"].Minimum = ptr(0.0)
	})
	if err != nil {
		return err
	}
	s.schemas["undo"] = sc
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "undo",
		Title: "Undo what commands changed in the workspace",
		Description: "Every terminal command's result lists what it changed in the workspace (changes: step, paths created, modified, deleted, renamed). " +
			"undo puts the workspace back as it was before the last command, or before step `to` (undoing the later steps too), " +
			"content, modes, links and deleted files included, and lists what it restored and which commands it undid. " +
			"It refuses, naming the paths, when the user edited them since (force reverts those edits too) or when their content was too big to keep. list: the steps.",
		InputSchema: sc,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)},
	}, sessionTool(s, (*Server).runUndo))
	return nil
}

func (s *Server) runUndo(ctx context.Context, sess *session, in UndoArgs) *mcp.CallToolResult {
	ss, err := sess.service()
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	if in.List {
		steps, err := ss.ChangeSteps(ctx)
		if err != nil {
			return s.failure(ctx, sess, "", err)
		}
		return result(stepsText(steps), StepList{Steps: nonNil(steps)})
	}
	done, err := ss.Undo(ctx, undo.UndoOptions{To: in.To, Force: in.Force})
	if err != nil {
		return s.failure(ctx, sess, "", err)
	}
	return result(undoneText(done), done)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func stepsText(steps []undo.Step) string {
	if len(steps) == 0 {
		return "no steps recorded"
	}
	var b strings.Builder
	for _, st := range steps {
		by := strings.Join(st.Commands, "; ")
		if by == "" {
			by = "(outside any command)"
		}
		fmt.Fprintf(&b, "step %d: %d change(s) by %s\n", st.Seq, st.Changes, by)
	}
	return b.String()
}

func undoneText(d *undo.Undone) string {
	var b strings.Builder
	fmt.Fprintf(&b, "undid step(s) %v: %s\n", d.Steps, strings.Join(d.Commands, "; "))
	for _, c := range d.Restored {
		fmt.Fprintf(&b, "%s %s\n", c.Kind, c.Path)
	}
	if d.More > 0 {
		fmt.Fprintf(&b, "… and %d more\n", d.More)
	}
	return b.String()
}

// changesText is a result's line on what the command changed.
func changesText(r *undo.Record) string {
	sum := r.Summary(5)
	if sum == "" {
		return ""
	}
	s := "[changed " + sum + "; the undo tool puts it back]"
	if len(r.NotKept) > 0 {
		s += fmt.Sprintf("\n[too big to keep, cannot be undone: %s]", strings.Join(r.NotKept, ", "))
	}
	return s
}
