package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

// journalReplyTimeout bounds a journal call instead of the client's reply
// timeout: a checkpoint walks the workspace and copies what changed (the
// first one copies everything), which takes longer than any other call.
const journalReplyTimeout = 10 * time.Minute

// journalArgs are a journal call's arguments: the journal's options
// (those of the stream's first call hold), and the command's label or
// what to undo.
type journalArgs struct {
	Options journalOptions   `json:"options"`
	Label   string           `json:"label,omitempty"`
	Undo    undo.UndoOptions `json:"undo"`
}

// journalOptions is undo.Options without its logger.
type journalOptions struct {
	Exclude      []string `json:"exclude,omitempty"`
	MaxBytes     int64    `json:"max_bytes,omitempty"`
	MaxFileBytes int64    `json:"max_file_bytes,omitempty"`
	MaxListed    int      `json:"max_listed,omitempty"`
}

func journalOptionsOf(o undo.Options) journalOptions {
	return journalOptions{Exclude: o.Exclude, MaxBytes: o.MaxBytes, MaxFileBytes: o.MaxFileBytes, MaxListed: o.MaxListed}
}

func (o journalOptions) undoOptions() undo.Options {
	return undo.Options{Exclude: o.Exclude, MaxBytes: o.MaxBytes, MaxFileBytes: o.MaxFileBytes, MaxListed: o.MaxListed}
}

// journalCmd names a command begun in a journal, on its stream.
type journalCmd struct {
	ID uint64 `json:"id"`
}

// Journal returns the change journal the agent keeps for the workspace
// root inside its environment (package undo, under the agent's state
// directory there). An empty root means the agent session's initial
// directory. The journal is opened in the agent on the first call.
func (cl *Client) Journal(ctx context.Context, root string, o undo.Options) (envs.ChangeJournal, error) {
	if root == "" {
		root = cl.Cwd()
	}
	if root == "" {
		return nil, fmt.Errorf("agent: change journal: no workspace directory: %w", envs.ErrBadCommand)
	}
	return &journal{cl: cl, root: root, opts: journalOptionsOf(o)}, nil
}

var _ envs.Journaler = (*Client)(nil)

// journal is a [envs.ChangeJournal] kept by the agent.
type journal struct {
	cl   *Client
	root string
	opts journalOptions
}

// call makes one journal call and decodes its answer into out.
func (j *journal) call(ctx context.Context, o op, args any, out any) error {
	data, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("agent: %s: %w", o, err)
	}
	seq, rc, err := j.cl.send(0, call{Op: o, Path: j.root, Data: data})
	if err != nil {
		return fmt.Errorf("agent: %s: %w", o, err)
	}
	r, err := j.cl.awaitFor(ctx, o, seq, rc, max(j.cl.reply, journalReplyTimeout))
	if err != nil {
		return fmt.Errorf("agent: %s %s: %w", o, j.root, err)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return &ProtocolError{Msg: fmt.Sprintf("%s: answer: %v", o, err)}
	}
	return nil
}

func (j *journal) Begin(ctx context.Context, label string) (envs.ChangeRecorder, error) {
	var c journalCmd
	if err := j.call(ctx, opJournalBegin, journalArgs{Options: j.opts, Label: label}, &c); err != nil {
		return nil, err
	}
	return &recorder{j: j, cmd: c}, nil
}

func (j *journal) Steps(ctx context.Context) ([]undo.Step, error) {
	var steps []undo.Step
	err := j.call(ctx, opJournalSteps, journalArgs{Options: j.opts}, &steps)
	return steps, err
}

func (j *journal) Undo(ctx context.Context, o undo.UndoOptions) (*undo.Undone, error) {
	var u undo.Undone
	if err := j.call(ctx, opJournalUndo, journalArgs{Options: j.opts, Undo: o}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// Close releases nothing here: the agent closes its journals when the
// stream ends, and what they recorded stays in the environment.
func (j *journal) Close() error { return nil }

// recorder is one command begun in an agent's journal.
type recorder struct {
	j   *journal
	cmd journalCmd
}

func (r *recorder) End(ctx context.Context) (*undo.Record, error) {
	var rec undo.Record
	if err := r.j.call(ctx, opJournalEnd, r.cmd, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
