package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// protectGit keeps .git/hooks and .git/config of the repository at the
// workspace root read-only. Landlock cannot take a subtree out of a
// writable directory, so the thread moves into a private mount namespace
// (inherited by the program it executes, invisible to everyone else) in
// which both are read-only bind mounts of themselves, and .git itself a
// bind mount: a mount point can be neither renamed nor removed, so the
// command cannot put a new .git with hooks of its own in its place.
// Nothing happens when there is no .git directory. It needs
// CAP_SYS_ADMIN; without it the files stay writable (Probe reports the
// layer degraded). Capabilities are dropped afterwards, and a Landlock
// domain may not mount, so the command cannot undo it.
func protectGit(workspace string) error {
	git := filepath.Join(workspace, ".git")
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() || !hasCap(unix.CAP_SYS_ADMIN) {
		return nil
	}
	hooks := filepath.Join(git, "hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("confine: creating %s: %w", hooks, err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("confine: private mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("confine: making mounts private: %w", err)
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

// gitRedirectFiles are files of a repository's .git directory that make
// git read its configuration and hooks from elsewhere: commondir names
// another git directory. A main repository's .git has none of git's own
// making, and .git/config being read-only does not stop one from being
// created.
var gitRedirectFiles = []string{"commondir"}

// GitRedirects lists the files of gitRedirectFiles present in the .git
// directory of the repository at workspace: a command may have left them
// for the user's next git command to follow, outside any sandbox.
func GitRedirects(workspace string) []string {
	git := filepath.Join(workspace, ".git")
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		return nil
	}
	var out []string
	for _, name := range gitRedirectFiles {
		p := filepath.Join(git, name)
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
