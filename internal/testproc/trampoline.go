package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/confine"
)

// TrampolineOnPath installs the running test binary as runbox-confine in
// a new directory at the head of PATH, as the install puts the real one,
// so that an environment nobody gave a Confiner finds it: the test
// binary must then play the trampoline in its TestMain (confine.Main for
// confine.Command). It returns the directory, for the caller to remove.
func TrampolineOnPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "runbox-confine-path-")
	if err != nil {
		return "", err
	}
	if err := os.Symlink(exe, filepath.Join(dir, confine.Trampoline)); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	os.Chmod(dir, 0o755) // the unprivileged user's commands start it too
	return dir, os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TrampolineMain ends a TestMain whose test binary plays the trampoline:
// it installs it on PATH (TrampolineOnPath), runs the tests under
// goleak.VerifyTestMain, removes the directory and exits.
func TrampolineMain(m *testing.M) {
	dir, err := TrampolineOnPath()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}
