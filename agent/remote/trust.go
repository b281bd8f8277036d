package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/statedir"
	"golang.org/x/sys/unix"
)

// A build runbox made is kept in the user's cache, which the commands it
// confines may write (compilers and package managers need theirs): one
// could build a program over a cached agent, and the next container,
// ssh host or sandbox would run it as runbox's own, as root. So runbox
// records the identity of each build it makes in its state directory,
// which no confined command may read or write, and uses a cached build
// only while the file is still that one. The identity is the file's
// device, inode, size and change time: a write into the file, a file
// renamed over it, or a restored modification time all change it (the
// change time cannot be set), and checking it costs a stat, not a hash.

// errUntrusted: a cached build is not the one runbox made.
var errUntrusted = errors.New("not the build runbox made (changed since, or made by another program): remove it, and runbox builds the agent again")

// trustDir is where build identities are recorded: runbox's state
// directory, found as runbox finds it.
func trustDir() (string, error) {
	state := statedir.Default(os.Getenv)
	if state == "" {
		return "", errors.New("no state directory to record builds in (set RUNBOX_STATE_DIR or HOME)")
	}
	return filepath.Join(state, "builds"), nil
}

// identity is what is recorded of the file at path.
func identity(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %d %d %d.%d", st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec), nil
}

// recordFile is the record of the build at path.
func recordFile(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:12]))
}

// recordBuild records the build at path as runbox's own. Taken after the
// last change runbox makes to the file (its rename into place, its link
// as the latest build).
func recordBuild(path string) error {
	dir, err := trustDir()
	if err != nil {
		return err
	}
	id, err := identity(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record build %s: %w", path, err)
	}
	// A name of its own for each writer: two goroutines of one process
	// may record the same build at once, and a name made from the pid
	// alone was renamed away under the second one.
	f, err := os.CreateTemp(dir, filepath.Base(recordFile(dir, path))+".*.tmp")
	if err != nil {
		return fmt.Errorf("record build %s: %w", path, err)
	}
	_, werr := f.WriteString(id)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), recordFile(dir, path))
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record build %s: %w", path, werr)
	}
	return nil
}

// trusted returns nil when the cached build at path is the one runbox
// recorded, else why not (wrapping errUntrusted).
func trusted(path string) error {
	dir, err := trustDir()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	want, err := os.ReadFile(recordFile(dir, path))
	if err != nil {
		return fmt.Errorf("%s: %w", path, errUntrusted)
	}
	got, err := identity(path)
	if err != nil || got != string(want) {
		return fmt.Errorf("%s: %w", path, errUntrusted)
	}
	return nil
}
