package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The state directory holds every job's output and records, the event
// log, and the daemon's socket. Another user who can change any of it —
// or any directory on the way to it — can make runbox write through a
// planted symbolic link into a file of the victim's (truncating it,
// appending to it), read the victim's job output, or answer in the
// daemon's place. So runbox trusts a state directory only when nobody
// else can change it, and checks that before it writes anything:
//
//  1. The state directory is a directory owned by this user (the
//     effective uid) that neither its group nor others may write to. A
//     missing one is created 0700, one level at a time with Mkdir; a name
//     that appears meanwhile (EEXIST) is checked like any existing one.
//  2. Every directory the path goes through (the ancestors, and the
//     directories of a symbolic link's target) belongs to this user or to
//     root, and is writable by nobody else unless it is sticky (like
//     /tmp, where others may add names but not replace ours).
//  3. A symbolic link on the way, the state directory's own name
//     included, is followed only when it belongs to this user or root
//     (the owner of a link in a sticky directory may replace it), and the
//     directory it leads to must pass rules 1 and 2. [Prepare]
//     returns the resolved path, which is what is used from then on.
//  4. Inside it, every directory runbox makes or uses (jobs/, cursors/,
//     run/, each job's directory) is created 0700 with Mkdir, and it —
//     whether new or found — must be a real directory (lstat: a symbolic
//     link is refused, not followed) owned by this user, not writable by
//     group or others.
//  5. Every file is opened with O_NOFOLLOW and must be a regular file of
//     this user with a single link (a hard link to a file elsewhere is
//     refused like a symbolic one). New files are created with O_EXCL;
//     JSON records are written to a fresh temporary file and renamed.
//
// Rules 1–3 make a checked path stable: only this user (or root) can
// change any directory on it, so what was checked is what is used, by
// this process and by the job supervisors it starts, which get a job
// directory's path. Anything that fails a rule is refused with a
// [*Error] (errors.Is [ErrUnsafe]), never repaired:
// whatever made it so may have placed something else too.

// maxSymlinks bounds the links followed while resolving a state
// directory, as the kernel does (ELOOP).
const maxSymlinks = 40

// Prepare makes dir fit to hold runbox's state and returns
// the path to use from then on: dir made absolute, with the symbolic
// links it goes through resolved. Missing directories are created 0700.
// It refuses, with a [*Error], a directory that another user
// could change (see the rules at the top of this file). Everything that
// keeps state (the job registry, sync records, undo journals, the CLI's
// daemon log) calls it before it writes anything there.
func Prepare(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", dir, err)
	}
	w := dirWalker{dir: abs, uid: os.Geteuid(), create: true}
	real, err := w.resolve(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", abs, err)
	}
	if err := w.private(real, fi); err != nil {
		return "", err
	}
	return real, nil
}

// dirWalker resolves a path the way the kernel would, checking each
// directory a name is looked up in and each symbolic link it follows.
type dirWalker struct {
	dir    string // the state directory, for errors
	uid    int
	create bool // make missing directories (0700)
}

func (w *dirWalker) refuse(path, format string, args ...any) error {
	return &Error{Dir: w.dir, Path: path, Problem: fmt.Sprintf(format, args...)}
}

// resolve returns path with every symbolic link resolved, after checking
// (rule 2 and 3) every directory and link on the way. The last component
// is only resolved: the caller checks it as a state directory (rule 1).
func (w *dirWalker) resolve(path string) (string, error) {
	cur := "/"
	fi, err := os.Lstat(cur)
	if err != nil {
		return "", fmt.Errorf("state directory %s: %w", w.dir, err)
	}
	if err := w.ancestor(cur, fi); err != nil {
		return "", err
	}
	rest := splitPath(path)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // already checked on the way down
			continue
		}
		p := filepath.Join(cur, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && w.create {
			// Mkdir, never MkdirAll: a name that appears meanwhile is
			// looked at below like any other.
			if err = os.Mkdir(p, 0o700); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(p)
			}
		}
		if err != nil {
			return "", fmt.Errorf("state directory %s: %w", w.dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if uid := OwnerOf(fi); uid != w.uid && uid != 0 {
				return "", w.refuse(p, "is a symbolic link owned by uid %d, not you (uid %d) or root", uid, w.uid)
			}
			if links++; links > maxSymlinks {
				return "", w.refuse(p, "leads through more than %d symbolic links", maxSymlinks)
			}
			target, err := os.Readlink(p)
			if err != nil {
				return "", fmt.Errorf("state directory %s: %w", w.dir, err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() {
			return "", w.refuse(p, "is not a directory")
		}
		if len(rest) > 0 {
			if err := w.ancestor(p, fi); err != nil {
				return "", err
			}
		}
		cur = p
	}
	return cur, nil
}

// ancestor checks a directory on the way to the state directory (rule 2).
func (w *dirWalker) ancestor(path string, fi fs.FileInfo) error {
	if uid := OwnerOf(fi); uid != w.uid && uid != 0 {
		return w.refuse(path, "is owned by uid %d, not you (uid %d) or root, and leads to it", uid, w.uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return w.refuse(path, "is writable by others (mode %04o) without the sticky bit, and leads to it", fi.Mode().Perm())
	}
	return nil
}

// private checks a directory that holds state (rules 1 and 4): fi is
// from Lstat, so a symbolic link is refused here.
func (w *dirWalker) private(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return w.refuse(path, "is a symbolic link")
	case !fi.IsDir():
		return w.refuse(path, "is not a directory")
	}
	if uid := OwnerOf(fi); uid != w.uid {
		return w.refuse(path, "is owned by uid %d, not you (uid %d)", uid, w.uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return w.refuse(path, "is writable by its group or others (mode %04o)", perm)
	}
	return nil
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// Mkdir creates path (0700) inside the checked state directory
// state, or accepts the one that is there if it passes rule 4. It never
// follows a symbolic link.
func Mkdir(state, path string) error {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("state directory: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	w := dirWalker{dir: state, uid: os.Geteuid()}
	return w.private(path, fi)
}

// CheckDir checks an existing directory inside the state
// directory (rule 4) without creating it.
func CheckDir(state, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	w := dirWalker{dir: state, uid: os.Geteuid()}
	return w.private(path, fi)
}

// CheckClosedDir refuses, with an [*Error], anything at path but
// a directory of this user that no one else may enter or change. It
// never follows a symbolic link at path. It is stricter than [CheckDir]
// (no one else may even enter): the supervisor host keeps its socket there.
func CheckClosedDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return &Error{Path: path, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse("is a symbolic link")
	case !fi.IsDir():
		return refuse("is not a directory")
	case OwnerOf(fi) != os.Geteuid():
		return refuse("is owned by uid %d, not you (uid %d)", OwnerOf(fi), os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return refuse("has mode %v, open to others", fi.Mode().Perm())
	}
	return nil
}
