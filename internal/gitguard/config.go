package gitguard

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// config checks the configuration file p: when it changed, every key not
// allowed is removed (the original copied aside first). It returns the
// core.hooksPath the file keeps, "" when none: a hooks path set before the
// command is the user's, and its hooks are checked.
func (c *checker) config(p string) string {
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	if !isRegular(p) {
		// A fifo git would wait on, or a device: git reads no
		// configuration from it anyway, and nothing may wait on it.
		if c.changed(p) {
			c.quarantine(p, "git-config "+regular.ErrNotRegular.Error())
		}
		return ""
	}
	if !c.changed(p) {
		// Asking git costs a process; most configurations name no hooks
		// path, which a look at the text tells (names are case-blind).
		b, err := readRegular(p)
		if err != nil || !bytes.Contains(bytes.ToLower(b), []byte("hookspath")) {
			return ""
		}
		return c.get(p, "core.hookspath")
	}
	keys, err := c.keys(p)
	if err != nil {
		// Unreadable to git: it stops before running anything, but
		// another git may read it differently; nothing of it is kept.
		c.quarantine(p, "git-config unreadable")
		return ""
	}
	var bad []string
	for _, k := range keys {
		if !allowedKey(k) && !c.worktreeInside(p, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	kept, err := c.copyAside(p)
	if err != nil {
		c.errs = append(c.errs, err)
		c.quarantine(p, "git-config "+bad[0])
		return ""
	}
	for _, k := range bad {
		if err := c.git("config", "--file", p, "--unset-all", k); err != nil {
			c.errs = append(c.errs, fmt.Errorf("gitguard: removing %s from %s: %w", k, p, err))
		}
	}
	if left, err := c.keys(p); err != nil || !c.allAllowed(p, left) {
		// git could not take a key out: the whole file goes.
		os.Remove(kept)
		c.quarantine(p, "git-config "+bad[0])
		return ""
	}
	for _, k := range bad {
		c.rep.Findings = append(c.rep.Findings, Finding{Path: p, Rule: "git-config " + k, Kept: kept})
	}
	return ""
}

func (c *checker) allAllowed(p string, keys []string) bool {
	for _, k := range keys {
		if !allowedKey(k) && !c.worktreeInside(p, k) {
			return false
		}
	}
	return true
}

// worktreeInside says that key is core.worktree naming a directory
// inside the workspace, as git submodule writes in a submodule's git
// directory (relative to it): the working tree it names is the
// workspace's own. One leading elsewhere is removed.
func (c *checker) worktreeInside(p, key string) bool {
	if strings.ToLower(key) != "core.worktree" {
		return false
	}
	wt := c.get(p, "core.worktree")
	if wt == "" {
		return false
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(filepath.Dir(p), wt)
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

// copyAside copies p beside itself, under the quarantine mark, and
// returns the copy's name.
func (c *checker) copyAside(p string) (string, error) {
	b, err := readRegular(p)
	if err != nil {
		return "", fmt.Errorf("gitguard: reading %s: %w", p, err)
	}
	kept := p + quarantineMark + c.stamp
	if err := os.WriteFile(kept, b, 0o600); err != nil {
		return "", fmt.Errorf("gitguard: keeping %s: %w", p, err)
	}
	return kept, nil
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
