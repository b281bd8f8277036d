package envs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// SpillRetention is how long spill files are kept in [DefaultSpillDir]:
// each time a new spill file is made there, those last written more than
// SpillRetention ago are removed. Nothing runs in the background to do it.
const SpillRetention = 24 * time.Hour

// spillPattern names spill files; only files of this shape are ever pruned.
const spillPattern = "runbox-output-*.log"

// DefaultSpillDir returns the directory that holds spill files when a
// [Capture] is given none: $TMPDIR/runbox-output-UID (os.TempDir), private
// to this user. It creates the directory (mode 0700) when it is missing and
// refuses one that is a symlink, is not a directory, belongs to another
// user or is open to others, so that nobody else can read or replace what
// a command printed.
func DefaultSpillDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("runbox-output-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("envs: spill directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("envs: spill directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("envs: spill directory %s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("envs: spill directory %s belongs to another user", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("envs: spill directory %s is open to other users (mode %v)", dir, fi.Mode().Perm())
	}
	return dir, nil
}

// PruneSpills removes the spill files in dir that were last written more
// than olderThan ago, and returns how many it removed. Files not named
// like spill files are never touched. Errors on single files are skipped:
// pruning is opportunistic.
func PruneSpills(dir string, olderThan time.Duration) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	cutoff := time.Now().Add(-olderThan)
	n := 0
	for _, e := range entries {
		if ok, _ := filepath.Match(spillPattern, e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// DefaultSpillDirMax bounds the spill files in [DefaultSpillDir] together:
// making a new one removes the oldest others until the rest fit.
const DefaultSpillDirMax int64 = 4 << 30

// BoundSpills removes the oldest spill files in dir (never keep) until
// those left add up to at most max bytes, and returns how many it
// removed. Like [PruneSpills], it touches spill files only and skips
// errors.
func BoundSpills(dir string, max int64, keep string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	type spill struct {
		path string
		size int64
		mod  time.Time
	}
	var all []spill
	var total int64
	for _, e := range entries {
		if ok, _ := filepath.Match(spillPattern, e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		all = append(all, spill{filepath.Join(dir, e.Name()), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	slices.SortFunc(all, func(a, b spill) int { return a.mod.Compare(b.mod) })
	n := 0
	for _, s := range all {
		if total <= max {
			break
		}
		if s.path == keep || os.Remove(s.path) != nil {
			continue
		}
		total -= s.size
		n++
	}
	return n
}

// RemoveSpills deletes the result's spill files, if it has any, and clears
// [Result.SpillPath] and [Result.StderrSpillPath]. A file already gone is
// not an error. The paths name files on the machine that ran the command:
// for a backend whose spills live elsewhere (inside a container), use that
// backend's own means.
func (r *Result) RemoveSpills() error {
	var errs []error
	for _, p := range []*string{&r.SpillPath, &r.StderrSpillPath} {
		if *p == "" {
			continue
		}
		if err := os.Remove(*p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("envs: remove spill: %w", err))
			continue
		}
		*p = ""
	}
	return errors.Join(errs...)
}
