package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Trampoline is the name of the small binary that runs [Main] on its own
// (cmd/runbox-confine). The install command puts it beside runbox.
const Trampoline = "runbox-confine"

// ErrNoTrampoline is returned by [Locate] when no confinement trampoline
// can be found. Callers that were asked for a sandbox refuse every command
// with it: without the trampoline there is no way to confine one.
var ErrNoTrampoline = errors.New("no confinement trampoline (" + Trampoline + ") beside this program or on PATH")

// Off is the policy that confines nothing. It is the only way to run a
// command unconfined: code that builds an environment names it, so that
// "no sandbox" is always a choice someone wrote down, never a default.
func Off() *Policy { return &Policy{Profile: ProfileOff, Network: NetworkOpen} }

// Locate finds the argv prefix that starts the trampoline: runbox-confine
// beside this program's executable (an installed runbox and its helpers),
// else on PATH. Programs that carry the trampoline themselves (the runbox
// binary, with its hidden [Command]) pass their own prefix instead.
func Locate() ([]string, error) {
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), Trampoline)
		if isExecutable(beside) {
			return []string{beside, Command}, nil
		}
	}
	if p, err := exec.LookPath(Trampoline); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return []string{abs, Command}, nil
		}
	}
	return nil, fmt.Errorf("confine: %w", ErrNoTrampoline)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
