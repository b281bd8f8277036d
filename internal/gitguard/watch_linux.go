package gitguard

import (
	"path/filepath"

	"github.com/runbox/runbox/internal/inotify"
	"golang.org/x/sys/unix"
)

// dirEvents is what makes a directory's listing stale: entries made,
// removed or moved in it, and the directory itself removed or moved.
// IN_DONT_FOLLOW and IN_ONLYDIR keep a watch from landing on what a link
// swapped in for the directory points at.
const dirEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// watcher is an inotify instance with a watch on each directory a walk
// listed, so that the next Check lists again only the directories whose
// entries changed and does not even stat the others. It runs no
// goroutine: a Check reads what queued up since the last one.
type watcher struct {
	fd      int
	byWD    map[int32]string // watch -> directory (absolute)
	watched map[string]int32 // the reverse, for the directories the walk knows by that name
	stale   map[string]bool  // directories whose entries changed since the last read
	lost    bool             // events were missed: the next Check trusts no watch
	quiet   bool             // the last read found no event at all
	budget  int              // the most watches it holds (inotify.Budget)
	buf     []byte
}

// newWatcher returns nil when the kernel gives no inotify instance (the
// user's instances are used up): Checks then stat every directory.
func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{fd: fd, byWD: map[int32]string{}, watched: map[string]int32{}, stale: map[string]bool{}, buf: make([]byte, 32<<10), budget: inotify.Budget()}
}

func (w *watcher) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

// watch puts a watch on dir before it is listed, so that no change
// after the listing goes unseen; false when it could not (the user's
// watches are used up: ENOSPC), and dir stays untrusted.
func (w *watcher) watch(dir string) bool {
	if _, ok := w.watched[dir]; !ok && len(w.byWD) >= w.budget {
		return false // over its share of the user's watches (see inotify.Budget)
	}
	n, err := unix.InotifyAddWatch(w.fd, dir, dirEvents)
	if err != nil {
		if w.watched[dir] != 0 {
			delete(w.byWD, w.watched[dir])
			delete(w.watched, dir)
		}
		return false
	}
	wd := int32(n)
	if old, ok := w.byWD[wd]; ok && w.watched[old] == wd {
		delete(w.watched, old) // the same directory, moved: known by its new name now
	}
	w.byWD[wd], w.watched[dir] = dir, wd
	return true
}

// missed makes the next read report missed events: its Check trusts
// no watch.
func (w *watcher) missed() { w.lost = true }

// trusted says that dir has a live watch under that name and nothing
// changed its entries since the last read.
func (w *watcher) trusted(dir string) bool {
	_, ok := w.watched[dir]
	return ok && !w.stale[dir]
}

// read takes every queued event; false when events were missed (the
// queue overflowed, or reading failed).
func (w *watcher) read() bool {
	clear(w.stale)
	w.quiet = true
	if !inotify.Drain(w.fd, w.buf, w.event) {
		w.lost = true
	}
	ok := !w.lost
	w.quiet = w.quiet && ok
	w.lost = false
	return ok
}

// event notes one event: an entry of a directory changed (its listing is
// stale), or the directory itself went (its parent's listing is stale,
// and the directory is no longer watched under that name).
func (w *watcher) event(wd int32, mask uint32, named bool) {
	w.quiet = false
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.lost = true
		return
	}
	dir, ok := w.byWD[wd]
	if !ok {
		return
	}
	switch {
	case mask&unix.IN_IGNORED != 0:
		delete(w.byWD, wd)
		if w.watched[dir] == wd {
			delete(w.watched, dir)
		}
	case named:
		w.stale[dir] = true
	default:
		w.stale[dir] = true
		w.stale[filepath.Dir(dir)] = true
		if w.watched[dir] == wd {
			delete(w.watched, dir) // moved or removed: not this name's any more
		}
	}
}
