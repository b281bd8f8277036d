package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

// journals are the change journals a served stream has opened, by
// workspace, and the commands begun in them and not yet ended. The
// journals themselves live on disk under ServerOptions.StateDir, so a
// stream that follows a lost one (the client reconnected) finds the same
// history.
type journals struct {
	dir string // undo/ under the agent's state directory; "" keeps none

	mu     sync.Mutex
	open   map[string]*undo.Journal // by the root the client named
	cmds   map[uint64]*undo.Command
	nextID uint64
}

func newJournals(stateDir string) *journals {
	j := &journals{open: map[string]*undo.Journal{}, cmds: map[uint64]*undo.Command{}}
	if stateDir != "" {
		j.dir = filepath.Join(stateDir, "undo")
	}
	return j
}

// journal returns the open journal of root, opening it with o the first
// time. The options of the first call hold for the stream.
func (js *journals) journal(root string, o undo.Options) (*undo.Journal, error) {
	if js.dir == "" {
		return nil, fmt.Errorf("agent: no state directory to keep a change journal in: %w", envs.ErrUnsupported)
	}
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("agent: change journal: workspace %q is not an absolute path: %w", root, envs.ErrBadCommand)
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if j := js.open[root]; j != nil {
		return j, nil
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("agent: change journal: workspace %s: %w", root, err)
	}
	if real == "/" {
		// Every checkpoint would walk, and mirror, the whole system.
		return nil, fmt.Errorf("agent: change journal: the workspace is the root directory (give the session a workspace directory): %w", envs.ErrUnsupported)
	}
	j, err := undo.Open(real, undo.DirFor(js.dir, real), o)
	if err != nil {
		return nil, fmt.Errorf("agent: change journal: %w", err)
	}
	js.open[root] = j
	return j, nil
}

// begin records a command begun in a journal and returns its id.
func (js *journals) begin(c *undo.Command) uint64 {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.nextID++
	js.cmds[js.nextID] = c
	return js.nextID
}

// take removes and returns the command id names.
func (js *journals) take(id uint64) *undo.Command {
	js.mu.Lock()
	defer js.mu.Unlock()
	c := js.cmds[id]
	delete(js.cmds, id)
	return c
}

// close closes every journal the stream opened; what they recorded
// stays on disk.
func (js *journals) close() error {
	js.mu.Lock()
	defer js.mu.Unlock()
	var errs []error
	for root, j := range js.open {
		if err := j.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close the journal of %s: %w", root, err))
		}
		delete(js.open, root)
	}
	clear(js.cmds)
	return errors.Join(errs...)
}

// journalCall answers a journal call, in its own goroutine (a checkpoint
// walks the workspace).
func (ss *session) journalCall(id uint32, cl call) {
	data, err := ss.journalOp(cl)
	if err != nil {
		ss.replyErr(id, cl.Seq, err)
		return
	}
	ss.reply(id, reply{Seq: cl.Seq, Data: data})
}

func (ss *session) journalOp(cl call) (json.RawMessage, error) {
	ctx := ss.ctx
	js := ss.journals
	if cl.Op == opJournalEnd {
		var in journalCmd
		if err := decodeData(cl, &in); err != nil {
			return nil, err
		}
		c := js.take(in.ID)
		if c == nil {
			return nil, fmt.Errorf("agent: journal.end: command %d was not begun on this stream: %w", in.ID, envs.ErrNotFound)
		}
		return encodeData(c.End(ctx))
	}
	var in journalArgs
	if err := decodeData(cl, &in); err != nil {
		return nil, err
	}
	j, err := js.journal(cl.Path, in.Options.undoOptions())
	if err != nil {
		return nil, err
	}
	switch cl.Op {
	case opJournalBegin:
		c, err := j.Begin(ctx, in.Label)
		if err != nil {
			return nil, err
		}
		return encodeData(journalCmd{ID: js.begin(c)}, nil)
	case opJournalSteps:
		return encodeData(j.Steps(ctx))
	default: // opJournalUndo
		return encodeData(j.Undo(ctx, in.Undo))
	}
}

func decodeData(cl call, v any) error {
	if len(cl.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(cl.Data, v); err != nil {
		return fmt.Errorf("agent: %s: %w: %v", cl.Op, envs.ErrBadCommand, err)
	}
	return nil
}

func encodeData[T any](v T, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agent: encode the journal's answer: %w", err)
	}
	return b, nil
}
