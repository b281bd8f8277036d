package confine

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A watch records what the file rules of a policy were built from, so
// that a ruleset built once can be checked, before each use, against the
// file system as it is now (see [Prepared.Current]). Landlock binds a rule
// to the file the path named when the ruleset was built; the rules are
// the ones a fresh build would make as long as
//
//   - every directory that was listed (each step toward a denied path:
//     its entries were granted one by one) holds the same entries, by
//     name, inode and type;
//   - every path that was looked up (a root granted whole, a device node,
//     the workspace) names the same file, or is still missing;
//   - every path whose symbolic links were resolved (the deny list, the
//     writable list) resolves to the same place.
//
// Nothing is compared by time stamp: a change within one tick of the
// file system's clock is seen as well.
//
// Comparing takes a few directory listings. So that it is not paid before
// every start, the directories those observations depend on are also
// watched with inotify: while no event has come, nothing can have
// changed, and current answers at the cost of one read that finds the
// queue empty. An event (or a lost one: the queue overflowed) makes the
// next current compare in full. Without inotify (a user out of
// instances), every current compares in full.
type watch struct {
	mu      sync.Mutex
	dirs    map[string][sha256.Size]byte
	entries map[string][]dirent // what each listed directory held
	files   map[string]fileID
	lfiles  map[string]fileID // looked up without following a last link
	links   map[string]link
	// resolving are the links current resolves again: those the
	// listings do not already vouch for (see seal).
	resolving []string

	// notify is the inotify instance watching the directories the
	// observations depend on (-1: none); dirty, that an event came since
	// the last full comparison found nothing changed. Both under mu.
	notify int
	dirty  bool
	// mounts are mount tables open from watchMounts on: a private
	// namespace's own, which changes when a file it mounts over is
	// replaced or removed outside it (the kernel then takes the mount
	// away). mountsMoved stays true once one changed.
	mounts      []int
	mountsMoved bool
}

// link is what resolving a path gave: with deny, by resolve (a missing
// path's deepest existing ancestor resolved), else by resolveLink.
type link struct {
	to   string
	deny bool
}

// fileID names a file by device and inode; the zero value stands for a
// path that does not exist.
type fileID struct {
	dev, ino uint64
	mode     fs.FileMode // the type bits only
}

func newWatch() *watch {
	return &watch{dirs: map[string][sha256.Size]byte{}, entries: map[string][]dirent{}, files: map[string]fileID{}, lfiles: map[string]fileID{}, links: map[string]link{}, notify: -1}
}

// watchMounts makes current false from the first change of one of
// tables (open mount tables, which w then owns).
func (w *watch) watchMounts(tables ...int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mounts = append(w.mounts, tables...)
}

// mountsChanged reports whether a mount table watched changed (under
// mu).
func (w *watch) mountsChanged() bool {
	if !w.mountsMoved && tablesChanged(w.mounts) {
		w.mountsMoved = true
	}
	return w.mountsMoved
}

// tablesChanged reports whether the kernel marked one of the open mount
// tables fds changed since it was opened or last asked (it marks one
// when a mount or unmount changes the table).
func tablesChanged(fds []int) bool {
	if len(fds) == 0 {
		return false
	}
	polls := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		polls[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLPRI}
	}
	changed := false
	if n, err := unix.Poll(polls, 0); err == nil && n > 0 {
		for _, p := range polls {
			if p.Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
				changed = true
			}
		}
	}
	return changed
}

// statID looks path up (following symbolic links, as a rule's open does).
func statID(path string) (fileID, error) { return idOf(path, unix.Stat) }

// lstatID is statID without following a link at the end of path.
func lstatID(path string) (fileID, error) { return idOf(path, unix.Lstat) }

// idOf is the file stat finds at path; the zero fileID when nothing is
// there.
func idOf(path string, stat func(string, *unix.Stat_t) error) (fileID, error) {
	var st unix.Stat_t
	if err := stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return fileID{}, nil
		}
		return fileID{}, fmt.Errorf("confine: %s: %w", path, err)
	}
	return fileID{dev: st.Dev, ino: st.Ino, mode: fs.FileMode(st.Mode & unix.S_IFMT)}, nil
}

// lstat records what path's own entry is (a link not followed), and
// returns it.
func (w *watch) lstat(path string) (fileID, error) {
	id, err := lstatID(path)
	if err == nil {
		w.mu.Lock()
		w.lfiles[path] = id
		w.mu.Unlock()
	}
	return id, err
}

// stat is os.Stat, recorded.
func (w *watch) stat(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if w != nil {
		id, ierr := statID(path)
		if ierr != nil {
			return nil, ierr
		}
		w.mu.Lock()
		w.files[path] = id
		w.mu.Unlock()
	}
	return fi, err
}

// resolveAll is the package's resolveAll, recorded.
func (w *watch) resolveAll(paths []string) ([]string, error) {
	out, err := resolveAll(paths)
	if err != nil || w == nil {
		return out, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range paths {
		w.links[p] = link{to: out[i], deny: true}
	}
	return out, nil
}

// evalSymlinks is resolveLink, recorded.
func (w *watch) evalSymlinks(path string) (string, error) {
	real, err := resolveLink(path)
	if err == nil && w != nil {
		w.mu.Lock()
		w.links[path] = link{to: real}
		w.mu.Unlock()
	}
	return real, err
}

// resolveLink is filepath.EvalSymlinks with a missing path as "" and no
// error.
func resolveLink(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", nil
	}
	return real, err
}

// dirent is one entry of a listed directory.
type dirent struct {
	name string
	ino  uint64
	typ  fs.FileMode
}

// readDir lists dir (sorted by name, as os.ReadDir) and records it.
func (w *watch) readDir(dir string) ([]dirent, error) {
	ents, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	if w != nil {
		w.mu.Lock()
		w.dirs[dir] = digest(ents)
		w.entries[dir] = ents
		w.mu.Unlock()
	}
	return ents, nil
}

// listDir reads the entries of dir with their inode numbers, which
// os.ReadDir does not give.
func listDir(dir string) ([]dirent, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: listing %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var out []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("confine: listing %s: %w", dir, err)
		}
		if n <= 0 {
			break
		}
		if out, err = parseDirents(dir, buf[:n], out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b dirent) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return out, nil
}

// parseDirents decodes linux_dirent64 records: inode (8 bytes), offset
// (8), record length (2), type (1), then the name, NUL-terminated.
func parseDirents(dir string, b []byte, out []dirent) ([]dirent, error) {
	for len(b) > 0 {
		if len(b) < 19 {
			return nil, fmt.Errorf("confine: listing %s: short directory record", dir)
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return nil, fmt.Errorf("confine: listing %s: bad directory record", dir)
		}
		rec := b[:reclen]
		b = b[reclen:]
		name := rec[19:]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		if s := string(name); s != "." && s != ".." {
			d := dirent{name: s, ino: binary.NativeEndian.Uint64(rec[0:8])}
			var err error
			if d.typ, err = direntType(dir, s, rec[18]); err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// direntType is the entry's type, looked up when the file system does not
// give it in the listing.
func direntType(dir, name string, t byte) (fs.FileMode, error) {
	switch t {
	case unix.DT_DIR:
		return fs.ModeDir, nil
	case unix.DT_REG:
		return 0, nil
	case unix.DT_LNK:
		return fs.ModeSymlink, nil
	case unix.DT_UNKNOWN:
		fi, err := os.Lstat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return fs.ModeIrregular, nil // gone since the listing: granting it is harmless
		}
		if err != nil {
			return 0, fmt.Errorf("confine: %w", err)
		}
		return fi.Mode().Type(), nil
	default:
		return fs.ModeIrregular, nil // devices, fifos, sockets: one kind for the rules
	}
}

func digest(ents []dirent) [sha256.Size]byte {
	h := sha256.New()
	var n [12]byte
	for _, e := range ents {
		binary.NativeEndian.PutUint64(n[:8], e.ino)
		binary.NativeEndian.PutUint32(n[8:], uint32(e.typ))
		h.Write(n[:])
		h.Write([]byte(e.name))
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// seal ends the recording: it finds the links that current must resolve
// again, which are those the listings do not vouch for, and starts
// watching. The watches are added after the observations were made: a
// change in between would go unnoticed, so seal compares once in full
// after adding them, and a difference leaves the watch dirty.
func (w *watch) seal() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for path, l := range w.links {
		if !w.vouched(path, l) {
			w.resolving = append(w.resolving, path)
		}
	}
	w.entries = nil // only needed until now
	w.startNotify()
	if w.notify >= 0 && !w.compare() {
		w.dirty = true
	}
}

// notifyMask is every change of a directory's entries, and of the
// directory itself going away.
const notifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// startNotify watches every directory an observation depends on: each
// listed directory, and each directory on the way to a path looked up or
// resolved (and to what it resolved to). It leaves notify at -1 when
// inotify cannot be had.
func (w *watch) startNotify() {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return
	}
	dirs := map[string]bool{}
	for d := range w.dirs {
		dirs[d] = true
	}
	ancestors := func(p string) {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			dirs[d] = true
			if d == "/" || d == "." {
				return
			}
		}
	}
	for p := range w.lfiles {
		ancestors(p)
	}
	for p := range w.files {
		ancestors(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			ancestors(real)
		}
	}
	for _, p := range w.resolving {
		ancestors(p)
		if to := w.links[p].to; to != "" {
			ancestors(to)
		}
	}
	for d := range dirs {
		_, err := unix.InotifyAddWatch(fd, d, notifyMask)
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			// Out of watches, or not allowed to: compare in full
			// every time rather than trust a partial watch. (A
			// directory that does not exist has nothing to watch:
			// its parent, watched, sees it appear.)
			unix.Close(fd)
			return
		}
	}
	w.notify = fd
}

// close stops watching.
func (w *watch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.notify >= 0 {
		unix.Close(w.notify)
		w.notify = -1
	}
	for _, fd := range w.mounts {
		unix.Close(fd)
	}
	w.mounts = nil
}

// changed reports whether an event came since the last call (draining
// the queue). When the watches no longer cover every directory (one was
// removed or moved: a new one in its place would not be watched), or
// events were lost, it stops watching: every later call of current
// compares in full.
func (w *watch) changed() bool {
	var buf [4096]byte
	got := false
	for {
		n, err := unix.Read(w.notify, buf[:])
		switch {
		case n > 0:
			got = true
			if !wholeWatch(buf[:n]) {
				unix.Close(w.notify)
				w.notify = -1
				return true
			}
		case errors.Is(err, unix.EAGAIN):
			return got
		case errors.Is(err, unix.EINTR):
		default:
			unix.Close(w.notify)
			w.notify = -1
			return true
		}
	}
}

// wholeWatch reports whether the events in b (struct inotify_event: wd,
// mask, cookie, name length, then the name) leave every watch in place
// and lost none.
func wholeWatch(b []byte) bool {
	const broken = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED | unix.IN_Q_OVERFLOW | unix.IN_UNMOUNT
	for len(b) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:8])
		size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:16]))
		if mask&broken != 0 || size > len(b) {
			return false
		}
		b = b[size:]
	}
	return true
}

// vouched reports whether the listings recorded decide how path resolves,
// so that resolving it again can give nothing new while they are
// unchanged: it resolved to itself (no symbolic link on the way), and
// each directory on the way down to it, as far as its components exist,
// was listed. A listing gives each component's inode and type, and a link
// cannot be changed without replacing it (a new inode).
func (w *watch) vouched(path string, l link) bool {
	path = filepath.Clean(path)
	if l.to != path && !(l.to == "" && !l.deny) {
		return false
	}
	dir := "/"
	rest := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, name := range rest {
		ents, listed := w.entries[dir]
		if !listed {
			return false
		}
		j := slices.IndexFunc(ents, func(e dirent) bool { return e.name == name })
		switch {
		case j < 0:
			return true // missing here, and so below: the listing says so
		case i == len(rest)-1:
			return ents[j].typ != fs.ModeSymlink
		case ents[j].typ != fs.ModeDir:
			return false
		}
		dir = filepath.Join(dir, name)
	}
	return false
}

// current reports whether every observation still holds.
func (w *watch) current() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mountsChanged() {
		return false
	}
	if w.notify >= 0 && w.changed() {
		w.dirty = true
	}
	if w.notify < 0 {
		return w.compare()
	}
	if !w.dirty {
		return true
	}
	if !w.compare() {
		return false // and stays dirty: the next call compares again
	}
	w.dirty = false
	return true
}

// compare makes every observation again and compares.
func (w *watch) compare() bool {
	for _, path := range w.resolving {
		want := w.links[path]
		var got string
		var err error
		if want.deny {
			got, err = resolve(path)
		} else {
			got, err = resolveLink(path)
		}
		if err != nil || got != want.to {
			return false
		}
	}
	for path, want := range w.files {
		if got, err := statID(path); err != nil || got != want {
			return false
		}
	}
	for path, want := range w.lfiles {
		if got, err := lstatID(path); err != nil || got != want {
			return false
		}
	}
	for dir, want := range w.dirs {
		ents, err := listDir(dir)
		if err != nil || digest(ents) != want {
			return false
		}
	}
	return true
}
