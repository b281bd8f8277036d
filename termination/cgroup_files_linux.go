// Plain file operations on cgroup directories, shared by v1 and v2: control-file writes, removal, limit counters.

package termination

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupGone reports whether err says the cgroup is no longer there:
// ENOENT, or ENODEV from a control file of a cgroup removed while it was
// being read or written (its last task exited and someone rmdir'ed it).
// Both mean an empty cgroup, never a failure to list or kill.
func cgroupGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV)
}

// writeCgroupFile writes s to the control file name of cgroup dir (which
// must exist: it never creates a file).
func writeCgroupFile(dir, name, s string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// cgroupPopulated reads the populated line of v2 cgroup dir's
// cgroup.events: whether a process is in dir or below it.
func cgroupPopulated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0", nil
		}
	}
	return false, fmt.Errorf("termination: %s/cgroup.events has no populated line", dir)
}

// makeCgroup creates cgroup dir, whose parent must exist. A dir that
// exists already is refused: it is another container's (an id in use
// twice), and sharing it would let one command's teardown kill the
// other's processes.
func makeCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("termination: create cgroup %s: %w", dir, err)
	}
	return nil
}

// limitFile is one control file a limit is written to.
type limitFile struct {
	ctrl     string // the controller the file belongs to
	name     string
	value    string
	optional bool // a kernel may lack it (swap accounting); errors are ignored
}

// controllers lists the controllers files belong to, once each.
func controllers(files []limitFile) []string {
	var out []string
	for _, f := range files {
		if !slices.Contains(out, f.ctrl) {
			out = append(out, f.ctrl)
		}
	}
	return out
}

// writeLimits writes files, in order, into cgroup dir.
func writeLimits(dir string, files []limitFile) error {
	for _, f := range files {
		if err := writeCgroupFile(dir, f.name, f.value); err != nil && !f.optional {
			return fmt.Errorf("termination: set %s of %s to %s: %w", f.name, dir, f.value, err)
		}
	}
	return nil
}

// removeTries bounds the rmdir retries of one cgroup: a cgroup whose last
// task just exited can refuse removal (EBUSY) for a moment.
const removeTries = 6

// removeCgroup removes cgroup dir and every cgroup below it, deepest
// first, with rmdir (a cgroup's control files cannot be unlinked, and
// rmdir of a populated cgroup fails, so nothing that still runs is
// touched). A missing dir is not an error.
func removeCgroup(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("termination: remove %s: %w", dir, err)
	}
	slices.Reverse(dirs) // WalkDir lists a parent before its children
	for _, d := range dirs {
		delay := 10 * time.Millisecond
		for i := 0; ; i++ {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || i == removeTries-1 {
				return fmt.Errorf("termination: remove %s: %w", d, err)
			}
			time.Sleep(delay) // bounded retry of a kernel refusal, not a wait for an event
			delay *= 2
		}
	}
	return nil
}

// limitEventIn reads the limit counters of a v2 cgroup directory and of
// v1 memory and pids directories; any may be empty.
func limitEventIn(v2dir, v1mem, v1pids string) string {
	if v2dir != "" && keyValue(filepath.Join(v2dir, "memory.events"), "oom_kill") > 0 {
		return LimitMemory
	}
	if v1mem != "" {
		switch n := keyValue(filepath.Join(v1mem, "memory.oom_control"), "oom_kill"); {
		case n > 0:
			return LimitMemory
		case n < 0 && keyValue(filepath.Join(v1mem, "memory.failcnt"), "") > 0:
			return LimitMemory
		}
	}
	if v2dir != "" && keyValue(filepath.Join(v2dir, "pids.events"), "max") > 0 {
		return LimitPids
	}
	if v1pids != "" && keyValue(filepath.Join(v1pids, "pids.events"), "max") > 0 {
		return LimitPids
	}
	return ""
}

// keyValue reads the number after key in a "key value" per line file, or
// the whole file's number when key is "". It returns -1 when the file or
// key is missing.
func keyValue(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	if key == "" {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
