package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/regular"
)

// PushReport says what a push did.
type PushReport struct {
	// Full is true for a first push: the whole tree in one stream.
	Full bool `json:"full"`
	// Sent are the paths written to the sandbox (files, links, new
	// directories); Deleted the ones removed there.
	Sent    []string `json:"sent"`
	Deleted []string `json:"deleted"`
	// Bytes is the file content sent.
	Bytes int64 `json:"bytes"`
	// Skipped are paths left out, with the reason.
	Skipped []string `json:"skipped,omitempty"`
	// Conflicts are files changed (or deleted) locally that the sandbox
	// changed too since the last push: neither side is overwritten, and
	// the comparison shows them as conflicts.
	Conflicts []string `json:"conflicts,omitempty"`
	// Replaced says why a push that had a manifest was a full one
	// anyway: the sandbox's directory is not the tree last pushed (its
	// container was made again, say). Empty otherwise.
	Replaced string `json:"replaced,omitempty"`
	// MovedAside is where, in the sandbox, a full push moved what the
	// directory held when it was not the tree last pushed (see
	// [MarkerName]); empty when nothing was moved.
	MovedAside string `json:"moved_aside,omitempty"`
}

// Push sends o.Dir to o.Remote in env: everything the first time (or when
// the task's manifest was made for another directory), afterwards only
// what changed since the last push, deleting what was deleted locally. The
// manifest is written only when every step succeeded; a failed push leaves
// the previous one as the base.
//
// Trees move with env's [envs.TreeTransfer], or, when it has none, with
// tar run in the sandbox.
func Push(ctx context.Context, env envs.Environment, o Options) (*PushReport, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	tt := trees(env)
	unlock, err := lock(o.StateDir, o.Task)
	if err != nil {
		return nil, err
	}
	defer unlock()
	prev, err := Load(o.StateDir, o.Task)
	if err != nil && !errors.Is(err, ErrNoManifest) {
		return nil, err
	}
	stale := prev != nil
	state, err := probeRemote(ctx, env, o.Remote)
	if err != nil {
		return nil, err
	}
	known := prev != nil && prev.ID != "" && state.id == prev.ID
	var replaced string
	switch {
	case prev == nil:
	case prev.Local != o.Dir || prev.Remote != o.Remote:
		prev = nil // another directory: start again
	case !known:
		// Not the tree the manifest describes: a new container, or a
		// directory replaced or emptied. Measured against the manifest,
		// nothing would be sent to it, and a comparison would take every
		// file for one the sandbox deleted.
		replaced = fmt.Sprintf("the sandbox's %s is not the tree last pushed (%s); everything is sent again", o.Remote, state.why())
		prev = nil
	}
	var base Tree
	if prev != nil {
		base = prev.tree()
	}
	scanned := time.Now().UnixNano()
	local, _, skipped, err := scanLocal(&o, prev)
	if err != nil {
		return nil, err
	}
	rep := &PushReport{Full: prev == nil, Skipped: skipped, Replaced: replaced}
	id := ""
	if prev != nil {
		id = prev.ID
	}
	var send []*Entry
	if rep.Full {
		// A full push replaces whatever the directory held. A manifest
		// left from before describes a tree that is going away: were it
		// kept through a failed push, the next push would be measured
		// against files that never arrived, and a comparison would take
		// them for deletions.
		if stale {
			if err := removeManifest(o.StateDir, o.Task); err != nil {
				return nil, err
			}
		}
		// The tree last pushed here is replaced (its changes were there
		// to compare before this push, as they always were); any other
		// is moved aside, never deleted: it may hold work.
		switch {
		case known || state.empty:
			if err := runIn(ctx, env, "/", nil, "rm", "-rf", "--", o.Remote); err != nil {
				return nil, err
			}
		default:
			if rep.MovedAside, err = moveAside(ctx, env, o.Remote); err != nil {
				return nil, err
			}
		}
		id = newTreeID()
		for _, e := range local {
			send = append(send, e)
		}
	} else {
		for p, b := range base {
			if e := local[p]; e == nil || e.Type != b.Type {
				rep.Deleted = append(rep.Deleted, p)
			}
		}
		for p, e := range local {
			if b := base[p]; !same(e, b) && !(e.Type == TypeDir && b != nil && b.Type == TypeDir) {
				send = append(send, e)
			}
		}
	}
	if !rep.Full {
		inflight, err := loadInflight(o.StateDir, o.Task)
		if err != nil {
			return nil, err
		}
		if send, err = holdConflicts(ctx, env, o.Remote, base, local, send, inflight, rep); err != nil {
			return nil, err
		}
		paths := make([]string, 0, len(send))
		for _, e := range send {
			paths = append(paths, e.Path)
		}
		if err := saveInflight(o.StateDir, o.Task, paths); err != nil {
			return nil, err
		}
	}
	sort.Strings(rep.Deleted)
	if err := remove(ctx, env, o.Remote, rep.Deleted); err != nil {
		return nil, err
	}
	sort.Slice(send, func(i, j int) bool { return send[i].Path < send[j].Path })
	if len(send) > 0 || rep.Full {
		pr, pw := io.Pipe()
		done := make(chan int64, 1)
		go func() { // ends when the stream is written or the reader side fails
			var marker []byte
			if rep.Full {
				marker = markerContent(id)
			}
			n, err := writeTar(pw, o.Dir, send, marker)
			pw.CloseWithError(err)
			done <- n
		}()
		err := tt.PutTree(ctx, o.Remote, pr)
		pr.CloseWithError(errors.New("workspace: transfer ended"))
		rep.Bytes = <-done
		if err != nil {
			return nil, fmt.Errorf("workspace: push %s to %s: %w", o.Dir, o.Remote, err)
		}
	}
	for _, e := range send {
		rep.Sent = append(rep.Sent, e.Path)
	}
	m := newManifest(&o)
	m.Scanned, m.ID = scanned, id
	m.setTree(local)
	if err := m.save(o.StateDir); err != nil {
		return nil, err
	}
	if err := clearInflight(o.StateDir, o.Task); err != nil {
		return nil, err
	}
	return rep, nil
}

// holdConflicts keeps back, from send and rep.Deleted, every file the
// sandbox changed since the last push: sending it would overwrite the
// sandbox's edit with the local one. Such a path keeps its old base in
// ours (so the manifest still records what was pushed) and is listed in
// rep.Conflicts. It returns what is left to send.
// A path a push that broke midway was sending (inflight) is never held:
// what the sandbox has there may be that push's own partial write.
func holdConflicts(ctx context.Context, env envs.Environment, remote string, base, ours Tree, send []*Entry, inflight map[string]bool, rep *PushReport) ([]*Entry, error) {
	var check []string
	for _, e := range send {
		if b := base[e.Path]; b != nil && b.Type == TypeFile {
			check = append(check, e.Path)
		}
	}
	for _, p := range rep.Deleted {
		if base[p].Type == TypeFile {
			check = append(check, p)
		}
	}
	if len(check) == 0 {
		return send, nil
	}
	hashes, err := sandboxHashes(ctx, env, remote, check)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for i, p := range check {
		// The sandbox agrees with the base (nothing of its own to lose) or
		// already holds the local state (a push that failed midway got
		// that far): not a conflict.
		want := "-"
		if e := ours[p]; e != nil && e.Type == TypeFile {
			want = e.Hash
		}
		if h := hashes[i]; h != base[p].Hash && h != want && !inflight[p] {
			held[p] = true
			rep.Conflicts = append(rep.Conflicts, p)
			ours[p] = base[p]
		}
	}
	if len(held) == 0 {
		return send, nil
	}
	kept := send[:0]
	for _, e := range send {
		if !held[e.Path] {
			kept = append(kept, e)
		}
	}
	deleted := rep.Deleted[:0]
	for _, p := range rep.Deleted {
		if !held[p] {
			deleted = append(deleted, p)
		}
	}
	rep.Deleted = deleted
	sort.Strings(rep.Conflicts)
	return kept, nil
}

// sandboxHashes returns the SHA-256 of each path (relative to dir) in
// the sandbox, in order, or "-" for one that is not a regular file. The
// names go on stdin, NUL-separated; only hashes come back.
func sandboxHashes(ctx context.Context, env envs.Environment, dir string, paths []string) ([]string, error) {
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	const script = `for f; do h=-; if [ -f "$f" ] && [ ! -L "$f" ]; then h=$(sha256sum < "$f") || exit 1; fi; printf '%s\n' "${h%% *}"; done`
	res, err := env.Run(ctx, envs.Command{
		Args:  []string{"sh", "-c", `cd -- "$1" || exit 1; exec xargs -0 sh -c "$0" sh`, script, dir},
		Stdin: &in, SeparateStreams: true, OutputLimit: -1,
	})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: hash files in the sandbox: %w", err)
	}
	out := strings.Fields(res.Output)
	if len(out) != len(paths) {
		return nil, fmt.Errorf("workspace: hash files in the sandbox: %d answers for %d files", len(out), len(paths))
	}
	return out, nil
}

// writeTar writes entries (sorted, so a directory precedes what is in
// it) as a tar stream, then marker (when not nil) as the tree's marker
// file. A file whose content no longer matches its scanned hash fails the
// stream: what the manifest records must be what was sent.
func writeTar(w io.Writer, root string, entries []*Entry, marker []byte) (int64, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	tw := tar.NewWriter(w)
	var sent int64
	for _, e := range entries {
		// The local modification time goes with each entry (to the
		// nanosecond, in a PAX record), so that make and the like in the
		// sandbox see which files are newer than what they built.
		h := &tar.Header{Name: e.Path, Mode: int64(e.Mode.Perm()), ModTime: time.Unix(0, e.MTime), Format: tar.FormatPAX}
		switch e.Type {
		case TypeDir:
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case TypeSymlink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		case TypeFile:
			h.Typeflag, h.Size = tar.TypeReg, e.Size
		}
		if err := tw.WriteHeader(h); err != nil {
			return sent, err
		}
		if e.Type != TypeFile {
			continue
		}
		n, err := copyChecked(tw, r, e)
		sent += n
		if err != nil {
			return sent, err
		}
	}
	if marker != nil {
		h := &tar.Header{Name: MarkerName, Mode: 0o644, Size: int64(len(marker)), ModTime: time.Now(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return sent, err
		}
		if _, err := tw.Write(marker); err != nil {
			return sent, err
		}
	}
	return sent, tw.Close()
}

// copyChecked copies the file of e in root to w, failing if it changed
// since the scan. It is read through no link that leads out of root: a
// directory swapped for a link to ~/.ssh after the scan sends nothing.
func copyChecked(w io.Writer, root *os.Root, e *Entry) (int64, error) {
	f, err := regular.OpenIn(root, filepath.FromSlash(e.Path))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyN(io.MultiWriter(w, h), f, e.Size)
	if err != nil {
		return n, fmt.Errorf("workspace: %s changed during the push: %w", e.Path, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != e.Hash {
		return n, fmt.Errorf("workspace: %s changed during the push", e.Path)
	}
	return n, nil
}

// remove deletes paths (relative to dir) in the sandbox. The names go on
// stdin, NUL-separated, so any byte string is passed exactly.
func remove(ctx context.Context, env envs.Environment, dir string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	return runIn(ctx, env, dir, &in, "xargs", "-0", "rm", "-rf", "--")
}

// runIn runs argv in dir in env and turns a failure into an error.
func runIn(ctx context.Context, env envs.Environment, dir string, stdin io.Reader, argv ...string) error {
	res, err := env.Run(ctx, envs.Command{Args: argv, Dir: dir, Stdin: stdin, OutputLimit: 4096})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		out := ""
		if res != nil {
			out = strings.TrimSpace(res.Output)
		}
		return fmt.Errorf("workspace: %s in the sandbox: %w (%s)", argv[0], err, out)
	}
	return nil
}
