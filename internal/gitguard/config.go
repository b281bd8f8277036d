package gitguard

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// config checks the configuration file p: when it changed, every key not
// allowed is removed (the original kept aside first). It returns the
// core.hooksPath the file keeps, "" when none: a hooks path set before the
// command is the user's, and its hooks are checked.
//
// The file is read once, inside the workspace and through no link that
// leads out of it (see checker.read), and git is handed a private copy of
// those bytes, never p: a command can make p (or a directory above it) a
// link to a credentials file, which git would read and git's writer
// would rewrite, and keep swapping it while the check runs. The cleaned
// file replaces p by a rename inside the workspace, which replaces
// whatever is there and writes through no link.
func (c *checker) config(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return c.linkedConfig(p)
	}
	changed := c.changed(p)
	if !fi.Mode().IsRegular() {
		// A fifo git would wait on, or a device: git reads no
		// configuration from it anyway, and nothing may wait on it.
		if changed && !c.o.InFlight {
			c.quarantine(p, "git-config "+regular.ErrNotRegular.Error())
		}
		return ""
	}
	data, err := c.read(p)
	switch {
	case err != nil:
		if changed && !c.o.InFlight {
			c.quarantine(p, "git-config unreadable")
		}
		return ""
	case !changed:
		return c.hooksPath(data)
	}
	return c.clean(p, fi.Mode().Perm(), data)
}

// linkedConfig checks a configuration that is a link. One the command
// made goes aside whole, unread: git would read, and its writer rewrite,
// wherever it leads. One that was there before is the user's: where it
// leads inside the workspace is checked as a configuration of its own;
// outside, the command could not change it, and only its hooks path is
// read.
func (c *checker) linkedConfig(p string) string {
	if c.changed(p) {
		c.quarantine(p, "git-config link")
		return ""
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	if c.inside(target) {
		return c.config(target)
	}
	data, err := readRegular(target, false)
	if err != nil {
		return ""
	}
	return c.hooksPath(data)
}

// hooksPath is the core.hooksPath the configuration data sets ("" when
// none). Asking git costs a process; most configurations name no hooks
// path, which a look at the text tells (names are case-blind).
func (c *checker) hooksPath(data []byte) string {
	if !bytes.Contains(bytes.ToLower(data), []byte("hookspath")) {
		return ""
	}
	work, err := c.scratch(data)
	if err != nil {
		return ""
	}
	defer os.Remove(work)
	return c.get(work, "core.hookspath")
}

// clean removes from the changed configuration p (data, as read) every
// key not allowed, keeping the original aside.
func (c *checker) clean(p string, perm fs.FileMode, data []byte) string {
	work, err := c.scratch(data)
	if err != nil {
		c.errs = append(c.errs, err)
		if !c.o.InFlight {
			c.quarantine(p, "git-config unreadable")
		}
		return ""
	}
	defer os.Remove(work)
	dir := filepath.Dir(p)
	keys, err := c.keys(work)
	if err != nil {
		// Unreadable to git: it stops before running anything, but
		// another git may read it differently; nothing of it is kept.
		// While the command runs it may be half written by its own git:
		// the check at its end decides.
		if !c.o.InFlight {
			c.quarantine(p, "git-config unreadable")
		}
		return ""
	}
	bad := c.notAllowed(work, dir, keys)
	if len(bad) == 0 {
		return ""
	}
	kept := p + quarantineMark + c.stamp
	// aside gives up on cleaning: the whole file goes aside, and the copy
	// kept so far (made is what was made) with it.
	aside := func(err error, made ...string) string {
		if err != nil {
			c.errs = append(c.errs, err)
		}
		for _, m := range made {
			c.removeInside(m)
		}
		c.quarantine(p, "git-config "+bad[0])
		return ""
	}
	if err := c.writeInside(kept, 0o600, data); err != nil {
		return aside(fmt.Errorf("gitguard: keeping %s: %w", p, err))
	}
	for _, k := range bad {
		if err := c.git("config", "--file", work, "--unset-all", k); err != nil {
			c.errs = append(c.errs, fmt.Errorf("gitguard: removing %s from %s: %w", k, p, err))
		}
	}
	cleaned, err := os.ReadFile(work)
	if left, kerr := c.keys(work); err != nil || kerr != nil || len(c.notAllowed(work, dir, left)) > 0 {
		return aside(nil, kept) // git could not take a key out
	}
	next := p + ".runbox-cleaned-" + c.stamp
	if err := c.writeInside(next, perm, cleaned); err != nil {
		return aside(fmt.Errorf("gitguard: cleaning %s: %w", p, err), kept)
	}
	if err := c.renameInside(next, p); err != nil {
		return aside(fmt.Errorf("gitguard: cleaning %s: %w", p, err), next, kept)
	}
	for _, k := range bad {
		c.rep.Findings = append(c.rep.Findings, Finding{Path: p, Rule: "git-config " + k, Kept: kept})
	}
	return ""
}

// notAllowed are the keys of the configuration work (a copy of one in
// dir) that are not allowed.
func (c *checker) notAllowed(work, dir string, keys []string) []string {
	var bad []string
	for _, k := range keys {
		if !allowedKey(k) && !c.worktreeInside(work, dir, k) {
			bad = append(bad, k)
		}
	}
	return bad
}

// worktreeInside says that key is core.worktree naming a directory
// inside the workspace, as git submodule writes in a submodule's git
// directory (relative to it, dir): the working tree it names is the
// workspace's own. One leading elsewhere is removed.
func (c *checker) worktreeInside(work, dir, key string) bool {
	if strings.ToLower(key) != "core.worktree" {
		return false
	}
	wt := c.get(work, "core.worktree")
	if wt == "" {
		return false
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(dir, wt)
	}
	real, err := filepath.EvalSymlinks(wt)
	return err == nil && c.inside(real)
}

// keys are the keys of the configuration file p, as git reads them
// (section and key lower case, a subsection as written).
func (c *checker) keys(p string) ([]string, error) {
	out, err := c.gitOut("config", "--file", p, "--null", "--name-only", "--list")
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range strings.Split(string(out), "\x00") {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// get is the last value of key in the configuration file p ("" when
// none).
func (c *checker) get(p, key string) string {
	out, err := c.gitOut("config", "--file", p, "--get", key)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// git runs git with args.
func (c *checker) git(args ...string) error {
	_, err := c.gitOut(args...)
	return err
}

// gitOut runs git with args and returns its standard output. It reads
// no configuration but the file named (no system or global one, no
// repository found from the working directory), so nothing it reads can
// make it run anything.
func (c *checker) gitOut(args ...string) ([]byte, error) {
	g := c.o.Git
	if g == "" {
		g = "git"
	}
	cmd := exec.CommandContext(c.ctx, g, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=/", "HOME=/nonexistent", "LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gitguard: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
