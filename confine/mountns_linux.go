package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runbox/runbox/internal/mountinfo"
)

// privateMounts gives the thread a private mount namespace (inherited by
// the program it executes, invisible to everyone else) in which every
// mount outside the writable roots is read-only, and then keeps the
// repository's control files read-only (protectGit). Landlock refuses
// writes outside the writable roots but not metadata: chmod, chown,
// utimes and extended attributes of any file the command may read. A
// read-only mount refuses them all (EROFS) while leaving reads, execution,
// device nodes, fifos and sockets as they were; the writable roots are
// bind mounts of themselves made writable again, and the denied paths
// inside them read-only binds. It needs CAP_SYS_ADMIN; without it, or on
// a kernel without mount_setattr (before Linux 5.12), nothing changes
// (Probe reports the layer degraded). Capabilities are dropped
// afterwards, and a Landlock domain may not mount, so the command cannot
// undo it.
func privateMounts(p Policy) error {
	if !mountLayer() {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("confine: private mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("confine: making mounts private: %w", err)
	}
	if err := readOnlyOutside(p); err != nil {
		return err
	}
	if p.ProtectGit && p.Profile == ProfileWorkspace {
		if err := protectGit(p.Workspace); err != nil {
			return err
		}
	}
	// The working directory was entered before the binds: it still
	// names the read-only mount beneath them. Entered again by name, it
	// is the mount the command is to see.
	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("confine: working directory: %w", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("confine: entering %s again: %w", wd, err)
	}
	return nil
}

// sharedMounts builds, on a thread of its own, the mount namespace
// privateMounts would give a thread now, and returns a descriptor of it
// (close-on-exec) for enterMounts: a prepared sandbox builds it once for
// every program it starts, instead of each program building one and
// tearing it down at its exit (about 0.3 ms a confined command, most of
// it the unmounts on the command's way out). It returns -1 without the
// mount layer. The paths the namespace was built from are recorded in w
// first, as the host sees them, and its own mount table watched, so
// that a change made after (a .git made at the workspace's root, a
// writable or denied path appearing, a pin taken away) makes w out of
// date: sharedNS then builds the namespace anew.
func sharedMounts(p Policy, w *watch) (int, error) {
	if !mountLayer() {
		return -1, nil
	}
	var err error
	for range sharedMountsTries {
		var fd int
		if fd, err = buildShared(p, w); err == nil {
			return fd, nil
		}
		if !errors.Is(err, errRepositoryMoved) {
			return -1, err
		}
	}
	return -1, err
}

// sharedMountsTries bounds the builds a repository changing under them
// can spoil, one after the other.
const sharedMountsTries = 3

// errRepositoryMoved: the repository's files changed while the
// namespace was built, so what it keeps read-only may not be what was
// recorded.
var errRepositoryMoved = errors.New("confine: the repository at the workspace's root changed while its protection was made")

// buildShared records the paths privateMounts depends on, builds the
// namespace, and checks in it that the repository's files it pinned are
// the ones recorded.
func buildShared(p Policy, w *watch) (int, error) {
	git := p.ProtectGit && p.Profile == ProfileWorkspace
	var repo repoFiles
	if git {
		// Made before the paths are recorded, as protectGit would.
		if _, _, err := gitHooks(p.Workspace); err != nil {
			return -1, err
		}
		var err error
		if repo, err = recordRepo(p.Workspace, w); err != nil {
			return -1, err
		}
	}
	for _, path := range mountPaths(p) {
		if _, err := w.stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return -1, err
		}
	}
	type result struct {
		ns, table int
		err       error
	}
	r := onSpareThread(func() result {
		if err := privateMounts(p); err != nil {
			return result{-1, -1, err}
		}
		// Opened before the check: a mount taken away after it is a
		// change of this table.
		table, err := unix.Open("/proc/thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return result{-1, -1, fmt.Errorf("confine: watching the private mount table: %w", err)}
		}
		if git {
			if err := repo.pinned(); err != nil {
				unix.Close(table)
				return result{-1, -1, err}
			}
		}
		ns, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(table)
			return result{-1, -1, fmt.Errorf("confine: opening the private mount namespace: %w", err)}
		}
		return result{ns, table, nil}
	})
	if r.err != nil {
		return -1, r.err
	}
	w.watchMounts(r.table)
	return r.ns, nil
}

// repoFiles are the repository's control files at the workspace's root
// as recorded before a namespace was built: each path's own entry (a
// link not followed, as protectGit looks), zero when missing.
type repoFiles struct {
	git, hooks, config string
	gitID, hooksID     fileID
	configID           fileID
}

// recordRepo records in w, and returns, the entries of .git, its hooks
// directory and its config.
func recordRepo(workspace string, w *watch) (repoFiles, error) {
	r := repoFiles{git: filepath.Join(workspace, ".git")}
	r.hooks, r.config = filepath.Join(r.git, "hooks"), filepath.Join(r.git, "config")
	var err error
	if r.gitID, err = w.lstat(r.git); err != nil {
		return r, err
	}
	if r.hooksID, err = w.lstat(r.hooks); err != nil {
		return r, err
	}
	r.configID, err = w.lstat(r.config)
	return r, err
}

// pinned checks, on a thread in the namespace just built, that
// protectGit pinned the .git recorded and made read-only the hooks and
// config recorded: a repository moved away and back while the namespace
// was built would otherwise leave it unprotected while the files look
// as recorded. Nothing is expected of a .git that was no directory.
func (r repoFiles) pinned() error {
	if r.gitID.mode != fs.FileMode(unix.S_IFDIR) {
		return nil
	}
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	// The mount table names mount points by their resolved paths.
	real, err := filepath.EvalSymlinks(filepath.Dir(r.git))
	if err != nil {
		return errRepositoryMoved
	}
	want := []struct {
		path     string
		id       fileID
		readOnly bool
	}{{r.git, r.gitID, false}, {r.hooks, r.hooksID, true}, {r.config, r.configID, true}}
	for _, x := range want {
		if x.id == (fileID{}) {
			continue
		}
		ro, ok := mounts[filepath.Join(real, strings.TrimPrefix(x.path, filepath.Dir(r.git)))]
		if got, err := lstatID(x.path); err != nil || got != x.id || !ok || x.readOnly && !ro {
			return errRepositoryMoved
		}
	}
	return nil
}

// mountPoints lists the calling thread's mount points, each with
// whether it is read-only.
func mountPoints() (map[string]bool, error) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("confine: reading the mount table: %w", err)
	}
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		// id parent major:minor root mount-point options ...
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		out[mountinfo.Unescape(f[4])] = slices.Contains(strings.Split(f[5], ","), "ro")
	}
	return out, nil
}

// mountPaths are the paths readOnlyOutside may bind (the repository's
// files are recordRepo's).
func mountPaths(p Policy) []string {
	var paths []string
	if p.Profile == ProfileWorkspace {
		paths = append(paths, p.Workspace)
	}
	paths = append(paths, p.Writable...)
	roots := slices.Clone(paths)
	for _, d := range p.DenyRead {
		if slices.ContainsFunc(roots, func(r string) bool { return within(d, r) }) {
			paths = append(paths, d)
		}
	}
	return paths
}

// enterMounts moves the calling thread, locked to its goroutine and
// never unlocked, into the mount namespace of fd (from sharedMounts),
// in the working directory it had, as seen there.
func enterMounts(fd int) error {
	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("confine: working directory: %w", err)
	}
	// A thread shares its root and working directory with the others
	// until it unshares them; joining a mount namespace needs its own.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("confine: unsharing the working directory: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("confine: entering the private mount namespace: %w", err)
	}
	// Joining sets the root and the working directory to the
	// namespace's root; the directory entered again by name is the
	// mount the command is to see.
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("confine: entering %s: %w", wd, err)
	}
	return nil
}

// readOnlyOutside makes every mount read-only, then the writable roots
// writable again, then the denied paths among them read-only.
func readOnlyOutside(p Policy) error {
	err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("confine: making the file system read-only: %w", err)
	}
	type bind struct {
		path     string
		readOnly bool
	}
	var binds []bind
	var roots []string
	if p.Profile == ProfileWorkspace {
		roots = append(roots, p.Workspace)
	}
	roots = append(roots, p.Writable...)
	for _, w := range roots {
		binds = append(binds, bind{w, false})
	}
	for _, d := range p.DenyRead {
		if slices.ContainsFunc(roots, func(r string) bool { return within(d, r) }) {
			binds = append(binds, bind{d, true})
		}
	}
	// The more specific path decides, as in the Landlock rules: a
	// writable directory inside a denied one is writable.
	slices.SortStableFunc(binds, func(a, b bind) int { return len(a.path) - len(b.path) })
	for _, b := range binds {
		if err := rebind(b.path, b.readOnly); err != nil {
			return err
		}
	}
	return nil
}

// rebind makes path a bind mount of itself, read-only or writable (and
// the mounts under it too). A missing path is skipped: it is neither
// writable nor there to protect.
func rebind(path string, readOnly bool) error {
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("confine: binding %s: %w", path, err)
	}
	attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if readOnly {
		attr = unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("confine: %s read-only %v: %w", path, readOnly, err)
	}
	return nil
}

// protectGit keeps .git/hooks and .git/config of the repository at the
// workspace root read-only in the thread's private mount namespace, and
// .git itself a bind mount: a mount point can be neither renamed nor
// removed, so the command cannot put a new .git with hooks of its own in
// its place. Nothing happens when there is no .git directory. (What a
// command leaves elsewhere in the workspace for git is made inert when it
// has ended: internal/gitguard.)
func protectGit(workspace string) error {
	git, hooks, err := gitHooks(workspace)
	if git == "" || err != nil {
		return err
	}
	if err := unix.Mount(git, git, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("confine: pinning %s: %w", git, err)
	}
	for _, p := range []string{hooks, filepath.Join(git, "config")} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("confine: binding %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("confine: making %s read-only: %w", p, err)
		}
	}
	return nil
}

// gitHooks returns the .git directory at the workspace's root and its
// hooks directory, made if missing (so that it can be kept read-only);
// "" when there is no .git directory.
func gitHooks(workspace string) (git, hooks string, err error) {
	git = filepath.Join(workspace, ".git")
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		return "", "", nil
	}
	hooks = filepath.Join(git, "hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", "", fmt.Errorf("confine: creating %s: %w", hooks, err)
	}
	return git, hooks, nil
}

// mountLayer reports whether privateMounts makes the read-only mount
// layer on this thread: with CAP_SYS_ADMIN (mount_setattr is older than
// Landlock).
func mountLayer() bool { return hasCap(unix.CAP_SYS_ADMIN) }
