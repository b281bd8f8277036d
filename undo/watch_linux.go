package undo

import (
	"strconv"

	"github.com/runbox/runbox/internal/inotify"
	"golang.org/x/sys/unix"
)

// watchMask is every event that can change what a checkpoint records of
// a directory's entries: names made, removed or moved, content written,
// modes, owners and times changed, and the directory itself removed or
// moved.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watcher holds an inotify watch on every directory of the workspace the
// last walk entered, and gathers the directories where something
// happened since, so that a checkpoint can look there only.
type watcher struct {
	fd    int
	dirs  map[int32]string // watch descriptor -> directory (relative; "" is the root)
	wds   map[string]int32 // the reverse: which directories are watched
	dirty map[string]bool
	// lost says events may be missing (the queue overflowed, a watch
	// could not be added, the root itself moved): the next checkpoint
	// must walk everything.
	lost bool
	// budget bounds the watches it holds (inotify.Budget).
	budget int
	buf    []byte
}

// newWatcher starts an inotify instance, or returns nil where there is
// none to have (the user's instances are used up, or the kernel has no
// inotify): checkpoints then walk everything, as they do without one.
func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{fd: fd, dirs: map[int32]string{}, wds: map[string]int32{}, dirty: map[string]bool{}, buf: make([]byte, 64<<10), budget: inotify.Budget()}
}

func (w *watcher) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

// add watches the directory open as fd, known as rel. It goes through
// the descriptor (/proc/self/fd), so the watch is on exactly the
// directory the walk entered, whatever has been renamed meanwhile. A
// directory already watched (moved within the workspace) keeps its
// watch under its new name.
func (w *watcher) add(fd int, rel string) {
	if len(w.dirs) >= w.budget {
		w.lost = true // over its share of the user's watches (see inotify.Budget)
		return
	}
	n, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		w.lost = true // no watch (ENOSPC: the user's limit): events would be missing
		return
	}
	wd := int32(n)
	if old, ok := w.dirs[wd]; ok && w.wds[old] == wd {
		delete(w.wds, old)
	}
	w.dirs[wd], w.wds[rel] = rel, wd
}

// watching says whether rel has a watch under that name.
func (w *watcher) watching(rel string) bool {
	_, ok := w.wds[rel]
	return ok
}

// drain reads every queued event and returns the directories where
// something happened since the last drain; ok is false when events may
// have been missed.
func (w *watcher) drain() (dirty map[string]bool, ok bool) {
	if !inotify.Drain(w.fd, w.buf, w.event) {
		w.lost = true
	}
	dirty, w.dirty = w.dirty, map[string]bool{}
	return dirty, !w.lost
}

// event notes one event: a named entry of a directory changed (the
// directory is dirty), or the directory itself did (its parent is).
func (w *watcher) event(wd int32, mask uint32, named bool) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.lost = true
		return
	}
	rel, ok := w.dirs[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.dirs, wd)
		if w.wds[rel] == wd {
			delete(w.wds, rel)
		}
		return
	}
	switch {
	case named:
		w.dirty[rel] = true
	case rel == "":
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			w.lost = true
		}
	default:
		w.dirty[parentDir(rel)] = true
	}
}
