package undo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// restorer writes the targets of an undo into the workspace. Every name
// it touches goes through an [os.Root] opened on the workspace, so no
// symbolic link the workspace holds can lead a write outside it, and no
// link is followed where a directory must be: it is removed first.
//
// The order matters: what must not exist is removed (deepest first),
// directories are made (shallowest first), files are written to a
// temporary name beside their place and renamed into it, links and fifos
// likewise; then modes are set, and last the modification times, since
// every write above moves the times of the directory it writes in.
type restorer struct {
	j       *Journal
	root    *os.Root
	ts      []target          // sorted by path
	parents map[string]parent // directories holding targets that are not targets themselves
	skipped []string
}

// parent is a directory undo writes in without restoring it: it is put
// back as it was found.
type parent struct {
	mode  fs.FileMode
	mtime time.Time
}

func (j *Journal) newRestorer(ts []target) *restorer {
	return &restorer{j: j, root: j.rootFS, ts: ts, parents: map[string]parent{}}
}

func (r *restorer) run() error {
	r.noteParents()
	for _, phase := range []func() error{r.unlock, r.remove, r.mkdirs, r.write, r.modes, r.times} {
		if err := phase(); err != nil {
			return err
		}
	}
	return nil
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func depth(p string) int { return strings.Count(p, "/") }

// deepestFirst orders paths so that what is inside a directory comes
// before it.
func deepestFirst(a, b string) int {
	if d := depth(b) - depth(a); d != 0 {
		return d
	}
	return strings.Compare(a, b)
}

func (r *restorer) isTarget(p string) bool {
	_, ok := slices.BinarySearchFunc(r.ts, p, func(t target, p string) int { return strings.Compare(t.path, p) })
	return ok
}

// noteParents remembers the mode and time of each directory undo will
// write in that is not itself restored.
func (r *restorer) noteParents() {
	for _, t := range r.ts {
		p := parentOf(t.path)
		if _, done := r.parents[p]; done || r.isTarget(p) {
			continue
		}
		if fi, err := r.root.Lstat(p); err == nil && fi.IsDir() {
			r.parents[p] = parent{mode: fi.Mode() & (fs.ModePerm | fs.ModeSticky), mtime: fi.ModTime()}
		}
	}
}

// unlock lets this user write in the directories undo writes in, until
// modes puts their modes back.
func (r *restorer) unlock() error {
	for _, t := range r.ts {
		p := parentOf(t.path)
		fi, err := r.root.Lstat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o300 == 0o300 {
			continue
		}
		if err := r.root.Chmod(p, fi.Mode()&(fs.ModePerm|fs.ModeSticky)|0o700); err != nil {
			return fmt.Errorf("undo: restore %s: %w", p, err)
		}
	}
	return nil
}

// remove removes, deepest first, what must not be where it is: anything
// where nothing must be, a directory where something else must be, and
// anything else where a directory must be.
func (r *restorer) remove() error {
	var gone []string
	for _, t := range r.ts {
		fi, err := r.root.Lstat(t.path)
		if err != nil {
			continue
		}
		if t.want == nil || fi.IsDir() != t.want.isDir() {
			gone = append(gone, t.path)
		}
	}
	slices.SortFunc(gone, deepestFirst)
	for _, p := range gone {
		if err := r.removeTree(p); err != nil {
			return fmt.Errorf("undo: restore %s: %w", p, err)
		}
	}
	return nil
}

// removeTree removes p and, if it is a directory, what it holds, without
// following links and without crossing into another filesystem.
func (r *restorer) removeTree(p string) error {
	fi, err := r.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return ignoreNotExist(r.root.Remove(p))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) != r.j.dev {
		return fmt.Errorf("%s is a mount point; not removing what it holds", p)
	}
	names, err := r.names(p)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := r.removeTree(p + "/" + name); err != nil {
			return err
		}
	}
	return ignoreNotExist(r.root.Remove(p))
}

func (r *restorer) names(dir string) ([]string, error) {
	f, err := r.openDir(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// openDir opens a directory within the root. O_DIRECTORY makes it fail
// at once on a fifo put in a directory's place, where a plain open would
// wait for a writer.
func (r *restorer) openDir(p string) (*os.File, error) {
	return r.root.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// mkdirs makes the directories that must exist, parents first (sorted
// paths put a directory before what it holds).
func (r *restorer) mkdirs() error {
	for _, t := range r.ts {
		if t.want == nil || !t.want.isDir() {
			continue
		}
		if fi, err := r.root.Lstat(t.path); err == nil && fi.IsDir() {
			continue
		}
		if err := r.root.Mkdir(t.path, 0o700); err != nil {
			return fmt.Errorf("undo: restore %s: %w", t.path, err)
		}
	}
	return nil
}

// write puts back files, links and fifos.
func (r *restorer) write() error {
	for _, t := range r.ts {
		if t.want == nil || t.want.isDir() {
			continue
		}
		var err error
		switch {
		case t.want.isFile():
			err = r.writeFile(t)
		case t.want.isLink():
			err = r.writeLink(t)
		case t.want.isFifo():
			err = r.writeFifo(t)
		default:
			err = r.special(t)
		}
		if err != nil {
			return fmt.Errorf("undo: restore %s: %w", t.path, err)
		}
	}
	return nil
}

func (r *restorer) tempName(p string) string {
	return path.Join(parentOf(p), ".runbox-undo-"+randomName())
}

func (r *restorer) writeFile(t target) error {
	if t.same {
		fi, err := r.root.Lstat(t.path)
		if err == nil && fi.Mode().IsRegular() && inode(fi) == t.now.Ino {
			return nil // the content is right: modes and times do the rest
		}
	}
	src, err := r.j.store.open(t.want.Hash)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := r.tempName(t.path)
	dst, err := r.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = copyInto(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.root.Rename(tmp, t.path)
	}
	if err != nil {
		r.root.Remove(tmp)
	}
	return err
}

// copyInto clones src into dst where the filesystem can, else copies,
// leaving blocks of zeros as holes (see sparseWriter).
func copyInto(dst, src *os.File) error {
	if cloneFile(int(dst.Fd()), int(src.Fd())) == nil {
		return nil
	}
	w := &sparseWriter{f: dst}
	if _, err := io.Copy(w, src); err != nil {
		return err
	}
	return w.finish()
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

func (r *restorer) writeLink(t target) error {
	if now, err := r.root.Readlink(t.path); err == nil && now == t.want.Target {
		return nil
	}
	tmp := r.tempName(t.path)
	if err := r.root.Symlink(t.want.Target, tmp); err != nil {
		return err
	}
	if err := r.root.Rename(tmp, t.path); err != nil {
		r.root.Remove(tmp)
		return err
	}
	return nil
}

func (r *restorer) writeFifo(t target) error {
	if fi, err := r.root.Lstat(t.path); err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		return nil
	}
	dir, err := r.openDir(parentOf(t.path))
	if err != nil {
		return err
	}
	defer dir.Close()
	tmp := r.tempName(t.path)
	if err := mkfifoat(int(dir.Fd()), path.Base(tmp), 0o600); err != nil {
		r.skipped = append(r.skipped, t.path)
		return nil
	}
	if err := r.root.Rename(tmp, t.path); err != nil {
		r.root.Remove(tmp)
		return err
	}
	return nil
}

// special keeps a socket or device that is still there; one that is not
// cannot be made by undo and is listed as skipped.
func (r *restorer) special(t target) error {
	if fi, err := r.root.Lstat(t.path); err == nil && fileFormat(fi) == t.want.format() {
		return nil
	}
	r.skipped = append(r.skipped, t.path)
	return nil
}

func fileFormat(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint32(st.Mode) & unix.S_IFMT
	}
	return 0
}

// modes sets the wanted modes (what is inside a directory first) and
// puts back those of the directories unlock opened.
func (r *restorer) modes() error {
	for _, t := range r.byDepth() {
		if t.want == nil || t.want.isLink() || slices.Contains(r.skipped, t.path) {
			continue
		}
		if err := r.root.Chmod(t.path, t.want.fileMode()); err != nil {
			return fmt.Errorf("undo: restore mode of %s: %w", t.path, err)
		}
	}
	for p, d := range r.parents {
		if err := r.root.Chmod(p, d.mode); ignoreNotExist(err) != nil {
			return fmt.Errorf("undo: restore mode of %s: %w", p, err)
		}
	}
	return nil
}

func (r *restorer) byDepth() []target {
	ts := slices.Clone(r.ts)
	slices.SortFunc(ts, func(a, b target) int { return deepestFirst(a.path, b.path) })
	return ts
}

// times sets modification times, directories last and deepest first:
// setting a time moves no other.
func (r *restorer) times() error {
	type stamp struct {
		path  string
		mtime time.Time
	}
	var dirs []stamp
	for _, t := range r.ts {
		switch {
		case t.want == nil || t.want.isLink() || slices.Contains(r.skipped, t.path):
		case t.want.isDir():
			dirs = append(dirs, stamp{t.path, time.Unix(0, t.want.Mtime)})
		default:
			if err := r.root.Chtimes(t.path, time.Time{}, time.Unix(0, t.want.Mtime)); err != nil {
				return fmt.Errorf("undo: restore time of %s: %w", t.path, err)
			}
		}
	}
	for p, d := range r.parents {
		dirs = append(dirs, stamp{p, d.mtime})
	}
	slices.SortFunc(dirs, func(a, b stamp) int { return deepestFirst(a.path, b.path) })
	for _, d := range dirs {
		if err := r.root.Chtimes(d.path, time.Time{}, d.mtime); ignoreNotExist(err) != nil {
			return fmt.Errorf("undo: restore time of %s: %w", d.path, err)
		}
	}
	return nil
}

// reindex brings the index up to date with what undo wrote: new inodes
// and change times, content hashes from the targets, and nothing under
// what it removed.
func (r *restorer) reindex(index map[string]entry) {
	var gone []string
	for _, t := range r.ts {
		e, err := r.statAt(t.path)
		if err != nil {
			delete(index, t.path)
			gone = append(gone, t.path)
			continue
		}
		if t.want != nil && e.format() == t.want.format() {
			e.Hash, e.Kept, e.Target = t.want.Hash, t.want.Kept, t.want.Target
		}
		if !e.isDir() {
			gone = append(gone, t.path) // a directory it replaced is gone with all it held
		}
		e.Racy = e.isFile() // written just now: hash it again next time
		index[t.path] = e
	}
	for p := range r.parents {
		if e, err := r.statAt(p); err == nil {
			if old, ok := index[p]; ok && old.isDir() && e.isDir() {
				index[p] = e
			}
		}
	}
	forgetUnder(index, gone)
}

// statAt lstats p through its parent directory, opened within the root.
func (r *restorer) statAt(p string) (entry, error) {
	dir, err := r.openDir(parentOf(p))
	if err != nil {
		return entry{}, err
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), path.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return entry{}, err
	}
	return fromStat(&st), nil
}

func forgetUnder(index map[string]entry, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	set := map[string]bool{}
	for _, d := range dirs {
		set[d] = true
	}
	for p := range index {
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			if set[p[:i]] {
				delete(index, p)
				break
			}
		}
	}
}
