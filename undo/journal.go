package undo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/statedir"
)

// Journal is the undo journal of one workspace directory. It is safe for
// concurrent use, and other processes may use the same journal directory
// at the same time: every operation holds an exclusive lock on it.
type Journal struct {
	root    string
	dir     string
	opts    Options
	log     *slog.Logger
	ex      *excluder
	store   store
	self    openCmd // pid and start time for the commands this process begins
	dev     uint64  // the root's device: the walk stays on it
	rootFS  *os.Root
	rootDir *os.File // the root, for the walk

	mu     sync.Mutex // guards what follows, and orders operations in this process
	lock   *os.File   // flock'd around every operation, against other processes
	closed bool
	// bounded says this process has checked the store against MaxBytes
	// since it last added content: only new content makes it grow.
	bounded bool
	gen     uint64 // the generation of the state in memory
	// held is the state file of generation gen, as read or as written,
	// kept open: while this process holds it, its inode cannot be
	// reused, so the path still naming that inode says nobody has
	// replaced the state (see [Journal.unchanged]).
	held  *os.File
	wbuf  *bufio.Writer // reused by writeFile
	mbuf  *bytes.Buffer // reused by saveMeta
	m     meta
	index map[string]entry
	refs  refs

	// watch follows the workspace between checkpoints (see rescan.go).
	// It may stand in for a walk only while synced: the last checkpoint
	// was saved by this process as generation watchGen, and nothing has
	// changed the journal since.
	watch    *watcher
	watchGen uint64
	synced   bool
	walked   time.Time // the last whole walk
	noWatch  bool      // tests: every checkpoint walks everything
	rescans  int       // tests: checkpoints the watcher stood in for
	// Views of index, built when first needed and kept in step by
	// checkpoints (nil: to be built).
	kids map[string][]string
	racy map[string]bool
}

// DirFor is the directory under parent that keeps the journal of the
// workspace root (absolute, its links resolved): one per workspace,
// named by a hash of its path, so that every process recording the same
// workspace (runbox on this machine, its agent in a sandbox) finds the
// same journal.
func DirFor(parent, root string) string {
	key := sha256.Sum256([]byte(root))
	return filepath.Join(parent, hex.EncodeToString(key[:8]))
}

// Open opens the journal kept in dir for the workspace root, creating it
// if needed. root must be an existing directory; it is made absolute and
// its symbolic links resolved (see [Journal.Root]). dir is created 0700
// and must belong to this user, and no one else may write to it. If dir
// lies inside root, it is left out of the walk.
//
// Open reads the journal but does not walk the workspace: the first
// checkpoint (the first [Journal.Begin] or [Journal.Undo]) does, and
// copies the workspace's content into the store.
func Open(root, dir string, opts Options) (*Journal, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	root, err = resolveRoot(root)
	if err != nil {
		return nil, err
	}
	if dir, err = prepareDirs(dir); err != nil {
		return nil, err
	}
	j := &Journal{
		root: root, dir: dir, opts: opts, log: opts.Logger,
		ex:    newExcluder(append(DefaultExcludes(), opts.Exclude...)),
		store: store{objects: filepath.Join(dir, "objects"), tmp: filepath.Join(dir, "tmp")},
		self:  openCmd{Pid: os.Getpid(), Start: procStart(os.Getpid())},
	}
	if rel, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(rel) {
		j.ex = newExcluder(append(j.ex.list, "/"+filepath.ToSlash(rel)))
	}
	if err := j.open(); err != nil {
		j.closeFiles()
		return nil, err
	}
	return j, nil
}

func resolveRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("undo: root: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("undo: root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("undo: root %s is not a directory", abs)
	}
	return abs, nil
}

// prepareDirs makes the journal directory and the directories in it.
// The journal holds copies of the workspace's files: another user who
// could change its directory could make runbox restore a file of theirs
// into the workspace, or write through a planted link. So the directory
// is trusted by the state directory's rules (package statedir): the
// path to it only this user or root can change, the directories in it
// this user's alone.
func prepareDirs(dir string) (string, error) {
	dir, err := statedir.Prepare(dir)
	if err != nil {
		return "", fmt.Errorf("undo: journal: %w", err)
	}
	for _, sub := range []string{"objects", "steps", "tmp"} {
		if err := statedir.Mkdir(dir, filepath.Join(dir, sub)); err != nil {
			return "", fmt.Errorf("undo: journal: %w", err)
		}
	}
	return dir, nil
}

// openPrivate opens a file inside the journal's directory: never through
// a symbolic link, and only a regular file of this user with one link (a
// hard link could make a write land in a file elsewhere).
func openPrivate(path string, flag int, perm os.FileMode) (*os.File, error) {
	return statedir.OpenFile(path, flag, perm)
}

// open opens the files the journal holds while open, loads its state
// and sweeps what a process that died mid-operation left behind.
func (j *Journal) open() error {
	var err error
	if j.lock, err = openPrivate(filepath.Join(j.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return fmt.Errorf("undo: lock: %w", err)
	}
	if j.rootFS, err = os.OpenRoot(j.root); err != nil {
		return fmt.Errorf("undo: root: %w", err)
	}
	if j.rootDir, err = os.OpenFile(j.root, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); err != nil {
		return fmt.Errorf("undo: root: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(j.rootDir.Fd()), &st); err != nil {
		return fmt.Errorf("undo: root: %w", err)
	}
	j.dev = uint64(st.Dev)
	return j.locked(context.Background(), func(*txn) error {
		if err := j.useKey(); err != nil {
			return err
		}
		return j.sweep()
	})
}

// useKey loads the key that names the store's objects (see [store]),
// making it the first time: written whole and synced before any object is
// named with it, so that a crash never leaves objects named by a key
// that is lost. Objects of a journal made before keys existed are named
// by their plain hash; sweep renames them.
func (j *Journal) useKey() error {
	path := filepath.Join(j.dir, "key")
	f, err := openPrivate(path, os.O_RDONLY, 0)
	if err == nil {
		defer f.Close()
		if _, err := io.ReadFull(f, j.store.key[:]); err != nil {
			return fmt.Errorf("undo: key: %w", err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("undo: key: %w", err)
	}
	rand.Read(j.store.key[:])
	return j.replaceFile(path, func(f *os.File) error {
		if _, err := f.Write(j.store.key[:]); err != nil {
			return err
		}
		return f.Sync()
	})
}

// Root is the workspace directory: absolute, with symbolic links resolved.
func (j *Journal) Root() string { return j.root }

// Close releases the journal's files. Commands still open stay open on
// disk until their process exits. Close waits for an operation in
// progress; later calls fail with [ErrClosed].
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	return j.closeFiles()
}

func (j *Journal) closeFiles() error {
	var errs []error
	if j.lock != nil {
		errs = append(errs, j.lock.Close())
	}
	j.hold(nil)
	if j.rootFS != nil {
		errs = append(errs, j.rootFS.Close())
	}
	if j.rootDir != nil {
		errs = append(errs, j.rootDir.Close())
	}
	j.watch.close()
	j.watch = nil
	return errors.Join(errs...)
}

// txn tracks what one operation changed, to save it or to roll it back.
type txn struct {
	before refs     // the objects in use when the operation began
	fresh  []digest // objects it wrote
	gone   []int64  // step files to remove once the state is saved
	dirty  bool     // the state in memory differs from the disk
	index  bool     // the index changed
	refs   bool     // the objects in use may have changed (index or steps)
	// checkpointed says the index is the tree as of now (the watcher's
	// events from here on are what changes it).
	checkpointed bool
}

// locked runs fn holding the journal's locks, with the state reloaded
// from disk. A change fn leaves unsaved is saved when fn succeeds and
// rolled back when it fails.
func (j *Journal) locked(ctx context.Context, fn func(*txn) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if err := flock(ctx, j.lock); err != nil {
		return fmt.Errorf("undo: lock journal: %w", err)
	}
	defer funlock(j.lock)
	if err := j.reload(); err != nil {
		return err
	}
	tx := &txn{before: j.refs}
	err := fn(tx)
	checkpointed := tx.checkpointed // commit clears tx
	if err == nil && tx.dirty {
		err = j.commit(tx)
	}
	if err != nil && tx.dirty {
		j.rollback(tx)
	}
	if err == nil && checkpointed && j.watch != nil {
		j.watchGen, j.synced = j.gen, true
	}
	return err
}

// commit saves the state, then removes the step files and objects
// nothing refers to any more.
func (j *Journal) commit(tx *txn) error {
	if tx.refs || tx.index {
		j.refs = refsOf(j.index, j.m.Steps)
	}
	if err := j.save(tx.index); err != nil {
		return err
	}
	for _, seq := range tx.gone {
		os.Remove(j.stepPath(seq))
	}
	if tx.refs || tx.index {
		j.collect(tx.before, tx.fresh)
	}
	*tx = txn{before: j.refs}
	return nil
}

// rollback forgets the unsaved state and the objects only it used.
func (j *Journal) rollback(tx *txn) {
	j.gen, j.index, j.m = 0, nil, meta{}
	if err := j.reload(); err != nil {
		j.log.Warn("undo: reload after a failed operation", "err", err)
		return
	}
	j.collect(nil, tx.fresh)
}

// collect removes the objects of old and fresh that are no longer in use.
func (j *Journal) collect(old refs, fresh []digest) {
	for h := range old {
		if j.refs[h] == nil {
			j.store.remove(h)
		}
	}
	for _, h := range fresh {
		if j.refs[h] == nil {
			j.store.remove(h)
		}
	}
}

// markDead marks the commands whose process has exited.
func (j *Journal) markDead() {
	for i := range j.m.Cmds {
		c := &j.m.Cmds[i]
		if !c.Dead && !alive(c.Pid, c.Start) {
			c.Dead = true
		}
	}
}

// trim drops the oldest steps until the store fits in MaxBytes and
// returns how many it dropped.
func (j *Journal) trim(tx *txn) int {
	if j.bounded {
		return 0
	}
	j.bounded = true
	r := refsOf(j.index, j.m.Steps)
	total, dropped := r.total(), 0
	for total > j.opts.MaxBytes && len(j.m.Steps) > 0 {
		s := j.m.Steps[0]
		for _, o := range s.Objs {
			total -= r.release(o.Hash)
		}
		j.m.Steps = j.m.Steps[1:]
		j.m.DroppedThrough = s.Seq
		tx.gone = append(tx.gone, s.Seq)
		tx.dirty, tx.refs = true, true
		dropped++
	}
	if dropped > 0 {
		j.log.Info("undo: dropped old steps to stay under the bound", "steps", dropped, "max_bytes", j.opts.MaxBytes, "bytes", total)
	}
	return dropped
}
