package procregistry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runbox/runbox/statedir"
)

// The state directory is trusted by the rules of package
// package statedir: a directory of this user that nobody else can
// change, reached only through directories and links nobody else can
// change, every directory and file inside it checked before use.

// prepareStateDir checks (and creates) the state directory and returns
// the path to use from then on (statedir.Prepare).
func prepareStateDir(dir string) (string, error) { return statedir.Prepare(dir) }

// mkdirPrivate creates path (0700) inside the checked state directory
// state, or accepts the one there if it passes statedir's rules.
func mkdirPrivate(state, path string) error { return statedir.Mkdir(state, path) }

// checkPrivateDir checks an existing directory inside the state
// directory without creating it.
func checkPrivateDir(state, path string) error { return statedir.CheckDir(state, path) }

// checkJobDir checks a job directory found in the state directory before
// the registry reads anything in it: the directory itself and its log,
// which the registry only ever reads.
func checkJobDir(state, dir string) error {
	if err := checkPrivateDir(state, dir); err != nil {
		return err
	}
	log := filepath.Join(dir, fileLog)
	fi, err := os.Lstat(log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("procregistry: %w", err)
	}
	if err := checkPrivateFile(log, fi); err != nil {
		var se *StateDirError
		if errors.As(err, &se) {
			se.Dir = state
		}
		return err
	}
	return nil
}
