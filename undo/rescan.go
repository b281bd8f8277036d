package undo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A checkpoint taken by a journal that stays open (a server's session)
// need not walk the whole workspace: the watcher has seen every
// directory where something happened since the last checkpoint, and only
// those are listed again. Everything else is carried over as it was. A
// directory that is new, or replaced, or moved in, is walked whole (and
// watched); one that is gone takes what was under it along.

// rescan builds the new index from the old one by looking again only at
// the directories in dirty, and at those holding a file the last
// checkpoint saw changing (racy).
func (s *scan) rescan(ctx context.Context, dirty map[string]bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.rescanning, s.gone = true, map[string]bool{}
	for p := range s.j.racyPaths() {
		dirty[parentDir(p)] = true
	}
	s.kids = s.j.children()
	defer func() { s.kids = nil }() // the journal's, updated by setIndex
	for _, rel := range slices.Sorted(maps.Keys(dirty)) {
		if err := s.relist(ctx, rel); err != nil {
			return err
		}
		// A directory whose entries changed has a new modification
		// time, which its parent's listing records.
		if up := parentDir(rel); rel != "" && !dirty[up] {
			if err := s.restat(up, rel); err != nil {
				return err
			}
		}
	}
	if len(s.linked) > 0 {
		if err := s.relistOtherNames(ctx, dirty); err != nil {
			return err
		}
	}
	for p := range s.gone {
		if s.underBlind(p) {
			delete(s.gone, p) // not known to be gone: kept as it was
		}
	}
	return nil
}

// relistOtherNames lists again the directories holding another name of a
// file the rescan met with more than one (a hard link, old or made since
// the last checkpoint, written through): a change made through one name
// is reported to the watch of that name's directory only, which the
// rescan listed. done are the directories listed already.
func (s *scan) relistOtherNames(ctx context.Context, done map[string]bool) error {
	more := map[string]bool{}
	for p, e := range s.old {
		if d := parentDir(p); e.isFile() && s.linked[inodeKey{e.Dev, e.Ino}] && !done[d] {
			more[d] = true
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(more)) {
		if err := s.relist(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// restat looks again at the entry of the directory rel in its parent up
// (not at what is in it).
func (s *scan) restat(up, rel string) error {
	fd, err := s.j.openDir(up)
	if err != nil {
		return nil // gone or unreadable: up's own listing, dirty too, says so
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, path.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil
	}
	if _, back := s.next[rel]; s.gone[rel] && !back || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil // replaced or gone: up is dirty and relisted too
	}
	return s.visit(fd, path.Base(rel), rel, &st)
}

// relist looks again at the entries of the directory rel.
func (s *scan) relist(ctx context.Context, rel string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.j.ex.covers(rel) {
		return nil
	}
	fd, err := s.j.openDir(rel)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		s.forget(rel) // gone: its parent's listing drops its own entry
		return nil
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		s.blind[rel] = true // what was known under it is not known to be gone
		return nil
	case err != nil:
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("undo: read directory %s: %w", rel, err)
	}
	seen := make(map[string]bool, len(names))
	w := s.walker(ctx)
	for _, name := range names {
		child := join(rel, name)
		seen[child] = true
		if err := s.look(w, fd, name, child); err != nil {
			return err
		}
	}
	for _, child := range s.kids[rel] {
		if !seen[child] {
			s.drop(child)
		}
	}
	return nil
}

// look stats one entry of a listed directory and, when it is a directory
// the watcher does not already follow under that name (new, replaced,
// moved in), walks it whole.
func (s *scan) look(w *walker, dirfd int, name, rel string) error {
	if s.j.ex.skip(rel, name) {
		return nil
	}
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since the listing: the watcher saw it go
	}
	if err != nil {
		return fmt.Errorf("undo: stat %s: %w", rel, err)
	}
	old, had := s.old[rel]
	if err := s.visit(dirfd, name, rel, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uint64(st.Dev) != s.j.dev {
		if had && old.isDir() {
			s.forget(rel) // a directory became something else
		}
		return nil
	}
	if had && old.isDir() && old.Ino == uint64(st.Ino) && s.watch != nil && s.watch.watching(rel) {
		return nil // the same directory, watched: its own events say what changed in it
	}
	s.forget(rel)
	s.dirty = true
	return w.enter(dirfd, name, rel)
}

// forget drops from the new index everything under the directory rel
// (not rel itself), as the old index knew it.
func (s *scan) forget(rel string) {
	for _, child := range s.kids[rel] {
		s.drop(child)
	}
}

// drop drops rel and everything under it from the new index.
func (s *scan) drop(rel string) {
	delete(s.next, rel)
	s.gone[rel] = true
	s.forget(rel)
}

// setIndex takes the index s built as the journal's, and keeps the
// journal's views of it (by directory, racy entries) in step.
func (j *Journal) setIndex(s *scan) {
	if !s.rescanning {
		j.index, j.kids, j.racy = s.index(), nil, nil
		return
	}
	kids, racy := j.children(), j.racyPaths()
	for p, e := range s.next {
		if _, had := s.old[p]; !had {
			d := parentDir(p)
			kids[d] = append(kids[d], p)
		}
		if e.Racy {
			racy[p] = true
		} else {
			delete(racy, p)
		}
	}
	for p := range s.gone {
		if _, back := s.next[p]; !back {
			d := parentDir(p)
			kids[d] = slices.DeleteFunc(kids[d], func(c string) bool { return c == p })
			delete(kids, p)
			delete(racy, p)
		}
	}
	j.index = s.index()
}

// children is the index by directory: the paths directly in each.
func (j *Journal) children() map[string][]string {
	if j.kids == nil {
		j.kids = childrenOf(j.index)
	}
	return j.kids
}

// racyPaths are the index's racy entries: files the next checkpoint
// looks at again whatever the watcher saw.
func (j *Journal) racyPaths() map[string]bool {
	if j.racy == nil {
		j.racy = map[string]bool{}
		for p, e := range j.index {
			if e.Racy {
				j.racy[p] = true
			}
		}
	}
	return j.racy
}

// childrenOf maps each directory of an index to the paths directly in
// it.
func childrenOf(index map[string]entry) map[string][]string {
	kids := make(map[string][]string)
	for p := range index {
		d := parentDir(p)
		kids[d] = append(kids[d], p)
	}
	return kids
}

// parentDir is the directory that holds rel ("" for the root's entries).
func parentDir(rel string) string {
	if d := path.Dir(rel); d != "." {
		return d
	}
	return ""
}

// openDir opens the directory rel of the workspace one name at a time
// from the root, never following a symbolic link, so a name swapped for
// a link cannot lead the scan out.
func (j *Journal) openDir(rel string) (int, error) {
	fd, err := unix.Openat(int(j.rootDir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "" {
		return fd, err
	}
	for _, name := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}
