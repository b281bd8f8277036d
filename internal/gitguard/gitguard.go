package gitguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultMaxDirs is how many directories Check walks when Options.MaxDirs
// is zero.
const DefaultMaxDirs = 200_000

// Options say what Check looks at.
type Options struct {
	// Since is when the command started: only what changed after it is
	// looked at.
	Since time.Time
	// MaxDirs bounds the walk of the workspace (DefaultMaxDirs if zero).
	MaxDirs int
	// Tree, when set, is the memory of earlier Checks of the same
	// workspace: unchanged directories are not read again.
	Tree *Tree
	// Git is the git program that reads and edits configuration files
	// ("git" on PATH if empty). Without one, a changed configuration with
	// any key is renamed aside whole.
	Git string
	// InFlight says the command still runs ([Watch]): a configuration
	// that cannot be read or parsed now may be one its own git is
	// writing, and is left for the check at its end rather than set
	// aside whole; so is a file that is not a regular one.
	InFlight bool
}

// Finding is one thing Check made inert.
type Finding struct {
	// Path is the file found.
	Path string `json:"path"`
	// Rule names what it was: git-config KEY, git-hook, git-redirect.
	Rule string `json:"rule"`
	// Kept is where the original now is (git never reads it).
	Kept string `json:"kept,omitempty"`
}

// Report is what Check found and did.
type Report struct {
	Findings []Finding
	// Incomplete says why the walk stopped early ("" when it did not).
	Incomplete string
}

// Check walks workspace and makes inert what changed since o.Since and
// would make git run a program or read configuration from elsewhere (see
// the package documentation). A nil error with findings means they were
// all made inert; an error says what could not be.
func Check(ctx context.Context, workspace string, o Options) (Report, error) {
	if o.MaxDirs <= 0 {
		o.MaxDirs = DefaultMaxDirs
	}
	root, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return Report{}, fmt.Errorf("gitguard: %w", err)
	}
	now := time.Now()
	fsys, err := os.OpenRoot(root)
	if err != nil {
		return Report{}, fmt.Errorf("gitguard: %w", err)
	}
	defer fsys.Close()
	c := &checker{ctx: ctx, root: root, fs: fsys, o: o, scan: now, stamp: now.UTC().Format("20060102T150405.000000000"), seen: map[string]bool{}}
	if t := o.Tree; t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		c.trust = t.begin(root)
		c.tree, c.next, c.w = t, make(map[string]*dirState, len(t.dirs)), t.w
		if !t.pending.IsZero() && t.pending.Before(c.o.Since) {
			// A Check before this one stopped short: what changed
			// since it began, where it did not reach, is looked at now.
			c.o.Since = t.pending
		}
	}
	if c.trust && c.tree.settled && c.w.quiet {
		c.known()
		return c.rep, errors.Join(c.errs...)
	}
	c.walk(root, false)
	if c.tree != nil {
		c.tree.settled = false
		if c.rep.Incomplete == "" {
			c.tree.dirs = c.next // what is no longer there is forgotten
			c.tree.settled = c.w != nil && !c.unwatched
			c.tree.pending = time.Time{}
		} else if c.tree.pending.IsZero() {
			c.tree.pending = c.o.Since
		}
		if c.rep.Incomplete != "" && c.w != nil {
			// The events read for this walk went unused where it did not
			// reach: the remembered listings are not to be trusted on the
			// strength of watches alone (their change times still are).
			c.w.missed()
		}
	}
	return c.rep, errors.Join(c.errs...)
}

// Tree remembers a workspace's directories between Checks (Options.Tree),
// so that a later Check reads again only the directories whose entries
// changed. Where the kernel has inotify, the Tree watches every directory
// it listed and a Check looks only where something happened (each of
// fullEvery Checks, and any after missed events, stats every directory
// again); elsewhere a Check stats every directory and lists again those
// whose change time moved. In a workspace of many directories that is
// most of the walk's cost. A session keeps one per workspace and closes
// it with the session. It is safe for concurrent use (Checks sharing it
// take turns).
type Tree struct {
	mu     sync.Mutex
	root   string
	dirs   map[string]*dirState
	w      *watcher // nil without inotify
	checks int
	closed bool // Close was called: no more watches
	// settled: the last walk was whole and every directory it knows is
	// watched, so that a Check after which inotify reports nothing at
	// all has the same tree to walk, and looks only at its git entries
	// (known), not at each directory.
	settled bool
	// pending is the Since of the first of the Checks that stopped
	// short since the last whole one (zero: none did). A command could
	// otherwise plant its leftovers past the bound and remove what made
	// the walk long with its next command: what it planted would be
	// older than every later Check's Since.
	pending time.Time
}

// fullEvery is how often a Check with a watcher stats every directory
// anyway: a bound on how long any gap in what inotify reports could last.
const fullEvery = 64

// begin readies t for a Check of root and says whether its watches can
// stand in for stat calls this time.
func (t *Tree) begin(root string) (trust bool) {
	if t.root != root {
		t.w.close()
		t.root, t.dirs, t.w, t.checks = root, nil, nil, 0
	}
	if t.w == nil && !t.closed {
		t.w = newWatcher()
	}
	t.checks++
	if t.w == nil {
		return false
	}
	caughtUp := t.w.read() // always: the queue must not fill up
	return caughtUp && t.dirs != nil && t.checks%fullEvery != 0
}

// Close releases the Tree's watches. A Check after Close stats every
// directory, as without inotify.
func (t *Tree) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.close()
	t.w, t.closed = nil, true
}

// dirState is one directory as a Check saw it.
type dirState struct {
	ino     uint64
	ctime   time.Time
	trusted bool          // ctime older than the scan: a later equal ctime means no change
	subdirs []string      // names of the directories in it (not .git, not links)
	gits    []fs.FileMode // the type of its .git entry, if it has one
}

// checker is one Check.
type checker struct {
	ctx   context.Context
	root  string
	fs    *os.Root // the workspace: what the check writes goes through it, through no link out
	o     Options
	scan  time.Time
	tree  *Tree                // nil: no memory between Checks
	next  map[string]*dirState // the tree as this Check saw it
	w     *watcher             // the tree's watches (nil: none)
	trust bool                 // directories the watches saw no change in are not looked at
	stamp string
	dirs  int
	seen  map[string]bool // git directories already checked
	rep   Report
	errs  []error
	// unwatched: a directory this walk listed got no watch.
	unwatched bool
	// closed are the directories readClosed opened, each held by a
	// descriptor, with its mode.
	closed map[string]closedDir
}

// known checks the git entries of the tree the last walk saw, in the
// order of their directories' names: nothing was made, removed or moved
// in any directory since, so there is no other.
func (c *checker) known() {
	var dirs []string
	for dir, d := range c.tree.dirs {
		if len(d.gits) > 0 {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		for _, g := range c.tree.dirs[dir].gits {
			c.gitEntry(filepath.Join(dir, ".git"), g)
		}
	}
}

// walk visits dir and what is under it, without following links, and
// hands each .git entry to gitEntry instead of descending into it.
// fresh says that dir's parent was listed anew: the name may stand for
// another directory than the one remembered.
func (c *checker) walk(dir string, fresh bool) {
	if c.rep.Incomplete != "" {
		return
	}
	if err := c.ctx.Err(); err != nil {
		c.rep.Incomplete = "stopped: " + err.Error()
		return
	}
	if c.dirs++; c.dirs > c.o.MaxDirs {
		c.rep.Incomplete = fmt.Sprintf("stopped after %d directories", c.o.MaxDirs)
		return
	}
	d, listed, ok := c.list(dir, fresh)
	if !ok {
		return // gone, or not ours to read: git cannot read it either
	}
	defer c.opened(dir)()
	for _, g := range d.gits {
		c.gitEntry(filepath.Join(dir, ".git"), g)
	}
	for _, sub := range d.subdirs {
		c.walk(filepath.Join(dir, sub), listed)
	}
}

// list is what dir holds that the walk needs (listed says it was read
// now): from the tree of an earlier Check when a watch on dir saw no
// change since, or when dir has not changed since (same inode, same
// ctime, and that ctime older than the scan that saw it, so no change in
// the same clock tick can hide), else read now. A watch is put on dir
// before it is looked at, so that nothing changed after goes unseen.
func (c *checker) list(dir string, fresh bool) (d *dirState, listed, ok bool) {
	if c.trust && !fresh && c.w.trusted(dir) {
		if d := c.tree.dirs[dir]; d != nil {
			c.next[dir] = d
			return d, false, true
		}
	}
	if c.w != nil && !c.w.watch(dir) {
		c.unwatched = true // the user's watches are used up: dir is never trusted
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil, false, false
	}
	ctime := time.Unix(st.Ctim.Unix())
	if c.tree != nil {
		if d := c.tree.dirs[dir]; d != nil && d.ino == st.Ino && d.ctime.Equal(ctime) && d.trusted {
			c.next[dir] = d
			return d, false, true
		}
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) {
		ents, err = c.readClosed(dir, st)
	}
	if err != nil {
		return nil, false, false
	}
	d = &dirState{ino: st.Ino, ctime: ctime, trusted: ctime.Before(c.scan.Add(-ctimeSlack))}
	for _, e := range ents {
		switch {
		case e.Name() == ".git":
			d.gits = append(d.gits, e.Type())
		case e.IsDir():
			d.subdirs = append(d.subdirs, e.Name())
		}
	}
	if c.tree != nil {
		c.next[dir] = d
	}
	return d, true, true
}

// closedDir is a directory readClosed opened: the directory itself,
// held as a path descriptor, and the mode it gets back.
type closedDir struct {
	fd   int
	mode fs.FileMode
}

// readClosed lists dir, a directory of this user's that its mode closes
// to its owner (chmod 111, chmod 0): git cannot read in it now, but the
// user's own chmod later opens it, with whatever the command left there.
// Its owner may open it, and the check does, until the walk below it is
// done (see opened), then gives it its mode back. Both changes go to the
// directory the check looked at, held by a descriptor (no link followed,
// the same inode as st), never to its path: a job may swap a link in for
// the directory while the walk runs, and a chmod by path would then land
// on whatever the link names (a key outside the workspace made readable).
func (c *checker) readClosed(dir string, st unix.Stat_t) ([]os.DirEntry, error) {
	if int(st.Uid) != os.Geteuid() {
		return nil, fs.ErrPermission
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("gitguard: %s changed under the check: %w", dir, fs.ErrPermission)
	}
	mode := fs.FileMode(st.Mode & 0o7777)
	if err := chmodHeld(fd, mode|0o700); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if c.closed == nil {
		c.closed = map[string]closedDir{}
	}
	c.closed[dir] = closedDir{fd: fd, mode: mode}
	lfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(lfd), dir)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// chmodHeld changes the mode of the file fd holds (a path descriptor),
// through its /proc/self/fd link, which names that inode and no other.
func chmodHeld(fd int, mode fs.FileMode) error {
	return os.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}

// opened returns what gives dir its mode back if readClosed opened it.
func (c *checker) opened(dir string) func() {
	held, ok := c.closed[dir]
	if !ok {
		return func() {}
	}
	return func() {
		delete(c.closed, dir)
		if err := chmodHeld(held.fd, held.mode); err != nil {
			c.errs = append(c.errs, fmt.Errorf("gitguard: giving %s its mode back: %w", dir, err))
		}
		unix.Close(held.fd)
	}
}

// gitEntry checks a .git directory, file or link.
func (c *checker) gitEntry(p string, mode fs.FileMode) {
	if mode.IsDir() {
		c.gitDir(p, true)
		return
	}
	c.pointer(p, "gitdir")
}

// pointer checks a file (or link) that makes git read another git
// directory: a .git file ("gitdir: X"), a .git link, a commondir. A
// changed one that leads outside the workspace is renamed aside; one that
// leads inside has its target checked.
func (c *checker) pointer(p, what string) {
	target, ok := pointee(p)
	if !ok && c.o.InFlight {
		return // perhaps half written by the command's git: its end decides
	}
	inside := ok && c.inside(target)
	if c.changed(p) && !inside {
		c.quarantine(p, "git-redirect "+what)
		return
	}
	if inside {
		c.gitDir(target, filepath.Base(target) == ".git")
	}
}

// pointee is the directory p points at: a link's target, or the path in
// a gitdir or commondir file, resolved as git resolves it (relative to
// the file's directory), links included.
func pointee(p string) (string, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false
	}
	var t string
	if fi.Mode()&fs.ModeSymlink != 0 {
		t = p // EvalSymlinks below follows it
	} else {
		b, err := readRegular(p, true)
		if err != nil {
			return "", false
		}
		t = strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir:"))
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
	}
	real, err := filepath.EvalSymlinks(t)
	if err != nil {
		return "", false
	}
	return real, true
}

// gitDir checks a git directory: its configuration, hooks, commondir,
// linked worktrees and submodules. worktree says that d is a .git
// directory whose parent is the working tree (core.hooksPath is relative
// to it).
func (c *checker) gitDir(d string, worktree bool) {
	real, err := filepath.EvalSymlinks(d)
	if err != nil || c.seen[real] || !c.inside(real) {
		return
	}
	c.seen[real] = true
	var hooksPath string
	for _, name := range []string{"config", "config.worktree"} {
		if hp := c.config(filepath.Join(d, name)); hp != "" {
			hooksPath = hp
		}
	}
	c.hooks(filepath.Join(d, "hooks"))
	if hooksPath != "" {
		c.hooksPathDir(d, hooksPath, worktree)
	}
	if _, err := os.Lstat(filepath.Join(d, "commondir")); err == nil {
		c.pointer(filepath.Join(d, "commondir"), "commondir")
	}
	c.subDirs(filepath.Join(d, "worktrees"), false)
	c.modules(filepath.Join(d, "modules"), 0)
}

// subDirs checks each directory of dir as a git directory.
func (c *checker) subDirs(dir string, worktree bool) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			c.gitDir(filepath.Join(dir, e.Name()), worktree)
		}
	}
}

// modules checks the submodules' git directories under dir: a directory
// holding HEAD is one (names may hold slashes, so others are looked into).
func (c *checker) modules(dir string, depth int) {
	if depth > 16 {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
			c.gitDir(p, false)
			continue
		}
		c.modules(p, depth+1)
	}
}

// hooks renames aside the hooks of dir that changed: every file but the
// samples git writes (git runs a hook by its exact name, so a renamed one
// never runs). A hooks directory replaced by a link goes aside whole.
func (c *checker) hooks(dir string) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return
	}
	if !fi.IsDir() {
		if c.changed(dir) {
			c.quarantine(dir, "git-hook")
		}
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".sample") || isQuarantined(e.Name()) || !c.changed(p) {
			continue
		}
		c.quarantine(p, "git-hook")
	}
}

// hooksPathDir checks the hooks of a core.hooksPath that a configuration
// the command did not change names (husky's .husky/_, say): inside the
// workspace, the command could write them.
func (c *checker) hooksPathDir(gitDir, hp string, worktree bool) {
	if strings.HasPrefix(hp, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			hp = filepath.Join(home, hp[2:])
		}
	}
	if !filepath.IsAbs(hp) {
		if !worktree {
			return // relative to a working tree runbox does not know
		}
		hp = filepath.Join(filepath.Dir(gitDir), hp)
	}
	if real, err := filepath.EvalSymlinks(hp); err == nil && c.inside(real) {
		c.hooks(real)
	}
}

// ctimeSlack is how long before Options.Since a change still counts as
// the command's: the kernel stamps ctime from a clock that lags the real
// one by up to a scheduler tick, so a write just after the command
// started can carry a time just before it. What the user changed in the
// second before a command is looked at too: only what would run a
// program is touched, and it is kept aside.
const ctimeSlack = time.Second

// changed says that p's inode changed (content, name, links or
// metadata) since the command started.
func (c *checker) changed(p string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return false
	}
	return !time.Unix(st.Ctim.Unix()).Before(c.o.Since.Add(-ctimeSlack))
}

// inside says that the resolved path p is the workspace or under it.
func (c *checker) inside(p string) bool {
	return p == c.root || strings.HasPrefix(p, c.root+string(filepath.Separator))
}

// quarantineMark is what a renamed-aside file's name carries.
const quarantineMark = ".runbox-quarantined-"

func isQuarantined(name string) bool { return strings.Contains(name, quarantineMark) }

// quarantine renames p aside and records it.
func (c *checker) quarantine(p, rule string) {
	kept := p + quarantineMark + c.stamp
	if err := c.renameInside(p, kept); err != nil {
		c.errs = append(c.errs, fmt.Errorf("gitguard: moving %s aside (%s): %w", p, rule, err))
		return
	}
	c.rep.Findings = append(c.rep.Findings, Finding{Path: p, Rule: rule, Kept: kept})
}
