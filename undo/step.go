package undo

import (
	"bufio"
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"time"
)

// Step is one entry of the journal: the changes between two consecutive
// checkpoints.
type Step struct {
	Seq      int64     `json:"step"`
	Time     time.Time `json:"time"`               // when the checkpoint that ended it was taken
	Commands []string  `json:"commands,omitempty"` // labels of the commands open during it; empty: made outside any command
	Changes  int       `json:"changes"`            // as a Record would list them (renames count once)
	Bytes    int64     `json:"bytes"`              // earlier content kept for it
	NotKept  int       `json:"not_kept,omitempty"` // files whose content, before or after, is not kept
}

// stepFile is a step as stored in steps/<seq>.
type stepFile struct {
	Seq   int64
	Time  time.Time
	Cmds  []cmdRef
	Diffs []diff // sorted by path
}

// Steps lists the journal's steps, oldest first. It does not take a
// checkpoint: changes made since the last one are not listed yet.
func (j *Journal) Steps(ctx context.Context) ([]Step, error) {
	var out []Step
	err := j.locked(ctx, func(*txn) error {
		out = make([]Step, 0, len(j.m.Steps))
		for _, s := range j.m.Steps {
			out = append(out, Step{Seq: s.Seq, Time: s.Time, Commands: labels(s.Cmds), Changes: s.Changes, Bytes: s.Bytes, NotKept: s.NotKept})
		}
		return nil
	})
	return out, err
}

func labels(cmds []cmdRef) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Label)
	}
	return out
}

// addStep stores the diffs found by a checkpoint as the next step.
func (j *Journal) addStep(ds []diff, cmds []cmdRef) (int64, error) {
	sf := stepFile{Seq: j.m.NextSeq, Time: time.Now().UTC(), Cmds: cmds, Diffs: ds}
	err := j.writeFile(j.stepPath(sf.Seq), func(w io.Writer) error { return gob.NewEncoder(w).Encode(&sf) })
	if err != nil {
		return 0, err
	}
	changes, more, _ := describe(ds, 1)
	sm := stepMeta{Seq: sf.Seq, Time: sf.Time, Cmds: cmds, Changes: len(changes) + more}
	seen := map[digest]bool{}
	for _, d := range ds {
		if k := d.kind(); k != "" && missingContent(&d, k) {
			sm.NotKept++
		}
		if b := d.Before; b != nil && b.isFile() && b.Kept && !seen[b.Hash] {
			seen[b.Hash] = true
			sm.Objs = append(sm.Objs, objRef{Hash: b.Hash, Size: b.Size})
			sm.Bytes += b.Size
		}
	}
	j.m.Steps = append(j.m.Steps, sm)
	j.m.NextSeq++
	return sf.Seq, nil
}

func (j *Journal) readStep(seq int64) (*stepFile, error) {
	f, err := openPrivate(j.stepPath(seq), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("undo: step %d: %w", seq, err)
	}
	defer f.Close()
	var sf stepFile
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&sf); err != nil {
		return nil, fmt.Errorf("undo: step %d is damaged: %w", seq, err)
	}
	return &sf, nil
}

// readSteps reads the steps s for which want is true, oldest first.
func (j *Journal) readSteps(want func(*stepMeta) bool) ([]*stepFile, error) {
	var out []*stepFile
	for i := range j.m.Steps {
		if !want(&j.m.Steps[i]) {
			continue
		}
		sf, err := j.readStep(j.m.Steps[i].Seq)
		if err != nil {
			return nil, err
		}
		out = append(out, sf)
	}
	return out, nil
}

// checkpoint walks the workspace and records what changed since the last
// checkpoint as a new step named after the commands open meanwhile. It
// returns the step's number, 0 when nothing changed. The first
// checkpoint of a journal records nothing: it makes the mirror.
func (j *Journal) checkpoint(ctx context.Context, tx *txn) (int64, error) {
	s := j.newScan()
	err := j.scanTree(ctx, s)
	if tx.fresh = append(tx.fresh, s.fresh...); len(s.fresh) > 0 {
		tx.dirty = true   // so a failure removes them
		j.bounded = false // the store grew
	}
	if err != nil {
		return 0, err
	}
	ds := s.diffs()
	first := j.m.IndexGen == 0
	j.setIndex(s)
	if s.dirty || first {
		tx.dirty, tx.index = true, true
	}
	tx.checkpointed = true
	cmds := j.stepCmds(tx)
	if first || len(ds) == 0 {
		return 0, nil
	}
	tx.dirty, tx.refs = true, true
	return j.addStep(ds, cmds)
}

// stepCmds names the commands open since the last checkpoint, and
// forgets those whose process has exited: their last step is this one.
func (j *Journal) stepCmds(tx *txn) []cmdRef {
	var refs []cmdRef
	open := j.m.Cmds[:0]
	for _, c := range j.m.Cmds {
		refs = append(refs, c.Ref)
		if c.Dead {
			tx.dirty = true
			continue
		}
		open = append(open, c)
	}
	j.m.Cmds = open
	return refs
}

// walkEvery bounds how long a watcher may stand in for walks: a change
// inotify does not report (a write through a shared mapping, or through
// a hard link from outside the workspace) is found by the next whole
// walk at the latest.
const walkEvery = 30 * time.Second

// scanTree fills s's new index: from the directories the watcher saw
// change when it has followed the workspace since the last checkpoint
// this process saved, by a whole walk otherwise, which starts a new
// watcher first so that nothing changed during the walk goes unseen.
func (j *Journal) scanTree(ctx context.Context, s *scan) error {
	synced := j.synced && j.watchGen == j.gen
	j.synced = false // until this checkpoint is saved
	if j.watch != nil {
		dirty, ok := j.watch.drain()
		if ok && synced && time.Since(j.walked) < walkEvery {
			s.watch = j.watch
			j.rescans++
			return s.rescan(ctx, dirty)
		}
		j.watch.close()
		j.watch = nil
	}
	if !j.noWatch {
		j.watch = newWatcher()
	}
	s.watch, j.walked = j.watch, time.Now()
	return s.run(ctx)
}
