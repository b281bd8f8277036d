package undo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// racyWindow: a file whose ctime is this close to the start of the walk
// that hashed it may be written again within the same timestamp tick
// without its metadata changing, so the next checkpoint hashes it again.
// Filesystem timestamps move in ticks of at most a few milliseconds.
const racyWindow = int64(100 * time.Millisecond)

// scan is one checkpoint's walk: it builds the new index from the old
// one, looking at the content only of what the metadata says changed.
type scan struct {
	j      *Journal
	old    map[string]entry
	next   map[string]entry
	start  int64 // ns
	blind  map[string]bool
	mirror int64 // bytes of content the new index keeps, for room
	sized  bool  // mirror has been counted
	fresh  []digest
	dirty  bool // the new index differs from the old
	buf    []byte
	// watch, when set, is given every directory the scan enters.
	watch *watcher
	// A rescan (rescan.go) leaves old as it is and puts in next only
	// what it looked at again; gone is what it found missing.
	rescanning bool
	gone       map[string]bool
	kids       map[string][]string // the old index by directory
	// linked holds the inodes of the files the scan looked at that have
	// another name (hard links): see relistOtherNames.
	linked map[inodeKey]bool
}

// inodeKey names an inode: one file, whatever names it has.
type inodeKey struct{ dev, ino uint64 }

func (j *Journal) newScan() *scan {
	return &scan{
		j:     j,
		old:   j.index,
		next:  map[string]entry{}, // sized by a whole walk; a rescan's is small
		start: time.Now().UnixNano(),
		blind: map[string]bool{},
	}
}

// walker is the scan's walk: every entry visited, every directory
// entered given to the watcher.
func (s *scan) walker(ctx context.Context) *walker {
	w := &walker{
		ctx:        ctx,
		skip:       s.j.ex.skip,
		dev:        s.j.dev,
		visit:      s.visit,
		unreadable: func(rel string) { s.blind[rel] = true },
	}
	if s.watch != nil {
		w.opened = s.watch.add
	}
	return w
}

// run walks the root.
func (s *scan) run(ctx context.Context) error {
	s.next = make(map[string]entry, len(s.old))
	if err := s.walker(ctx).walk(int(s.j.rootDir.Fd())); err != nil {
		return err
	}
	s.carry()
	return nil
}

func (s *scan) visit(dirfd int, name, rel string, st *unix.Stat_t) error {
	e := fromStat(st)
	if st.Nlink > 1 && e.isFile() {
		if s.linked == nil {
			s.linked = map[inodeKey]bool{}
		}
		s.linked[inodeKey{e.Dev, e.Ino}] = true
	}
	old, had := s.old[rel]
	if had && !old.Racy && old.sameMeta(&e) {
		s.next[rel] = old
		return nil
	}
	s.dirty = true
	switch {
	case e.isLink():
		t, err := readlinkat(dirfd, name)
		if err != nil {
			s.j.log.Warn("undo: cannot read link", "path", rel, "err", err)
		}
		e.Target = t
	case e.isFile():
		var err error
		if e, err = s.content(dirfd, name, rel, e, old, had); err != nil {
			return err
		}
	}
	s.next[rel] = e
	return nil
}

// content hashes a file whose metadata changed and keeps its content.
// The entry it returns has the metadata of the open file, taken before
// reading: a write during the read changes it, so the next checkpoint
// looks again.
func (s *scan) content(dirfd int, name, rel string, e, old entry, had bool) (entry, error) {
	if e.Size > s.j.opts.MaxFileBytes {
		return e, nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return s.unopened(rel, e, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return e, fmt.Errorf("undo: stat %s: %w", rel, err)
	}
	n := fromStat(&st)
	if !n.isFile() || n.Ino != e.Ino || n.Dev != e.Dev {
		e.Racy = true // replaced since the walk saw it
		return e, nil
	}
	if n.Size > s.j.opts.MaxFileBytes {
		return n, nil
	}
	if s.buf == nil {
		s.buf = make([]byte, 256<<10) // only a scan that reads content needs it
	}
	res, err := s.j.store.put(putRequest{
		src: f, size: n.Size, limit: s.j.opts.MaxFileBytes, buf: s.buf,
		likelySame: had && old.isFile() && old.Kept && old.Size == n.Size,
		room:       s.room,
	})
	if err != nil {
		return e, fmt.Errorf("undo: keep %s: %w", rel, err)
	}
	if res.fresh {
		s.fresh = append(s.fresh, res.hash)
	}
	n.Hash, n.Kept = res.hash, res.kept
	n.Racy = n.Ctime >= s.start-racyWindow || n.Mtime >= s.start-racyWindow
	return n, nil
}

// unopened handles a file the scan could not open: gone or replaced
// since the walk saw it (the next checkpoint looks again), or unreadable
// (tracked by metadata only).
func (s *scan) unopened(rel string, e entry, err error) (entry, error) {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO):
		e.Racy = true
		return e, nil
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		s.j.log.Warn("undo: cannot read file; its content is not kept", "path", rel, "err", err)
		return e, nil
	}
	return e, fmt.Errorf("undo: open %s: %w", rel, err)
}

// room reserves space in the store for new content, as long as the
// mirror stays within the bound.
func (s *scan) room(size int64) bool {
	if !s.sized { // counted only when something new is to be kept
		s.mirror, s.sized = mirrorBytes(s.old), true
	}
	if s.mirror+size > s.j.opts.MaxBytes {
		return false
	}
	s.mirror += size
	return true
}

// carry keeps what the old index knew under directories the walk could
// not read, and forgets, without a change, what is now excluded.
func (s *scan) carry() {
	for p, e := range s.old {
		if _, ok := s.next[p]; ok {
			continue
		}
		if s.j.ex.covers(p) {
			s.dirty = true
			continue
		}
		if s.underBlind(p) {
			s.next[p] = e
		}
	}
}

func (s *scan) underBlind(p string) bool {
	if len(s.blind) == 0 {
		return false
	}
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if s.blind[p[:i]] {
			return true
		}
	}
	return false
}

// diffs lists what changed between the old index and the new, sorted by
// path: everything with a Change, and everything whose modification time
// moved (undo restores times too).
func (s *scan) diffs() []diff {
	var ds []diff
	for p, n := range s.next {
		o, had := s.old[p]
		switch {
		case !had:
			ds = append(ds, diff{Path: p, After: &n})
		case o.Mtime != n.Mtime || (&diff{Before: &o, After: &n}).kind() != "":
			ds = append(ds, diff{Path: p, Before: &o, After: &n})
		}
	}
	for p := range s.missing() {
		o := s.old[p]
		ds = append(ds, diff{Path: p, Before: &o})
	}
	slices.SortFunc(ds, func(x, y diff) int { return strings.Compare(x.Path, y.Path) })
	return ds
}

// missing yields the paths of the old index that are not in the new.
func (s *scan) missing() iter.Seq[string] {
	return func(yield func(string) bool) {
		if s.rescanning {
			for p := range s.gone {
				if _, back := s.next[p]; !back && !yield(p) {
					return
				}
			}
			return
		}
		for p := range s.old {
			if _, ok := s.next[p]; !ok && !s.j.ex.covers(p) && !yield(p) {
				return
			}
		}
	}
}

// index is the new index. A rescan's is the old one with what it found
// applied (the old one is not needed after diffs; a failed operation
// reloads the index from disk).
func (s *scan) index() map[string]entry {
	if !s.rescanning {
		if len(s.next) != len(s.old) {
			s.dirty = true
		}
		return s.next
	}
	for p := range s.gone {
		if _, back := s.next[p]; !back {
			delete(s.old, p)
			s.dirty = true
		}
	}
	maps.Copy(s.old, s.next)
	return s.old
}
