package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// containerCLI is the static runbox that job commands put in a sandbox
// (docker, kubernetes, an ssh host), built once per test binary.
var containerCLI struct {
	once sync.Once
	err  error
}

// needContainerCLI builds a static runbox beside this test binary, as
// runbox-linux-<arch>, where the backends look first (remote.Program.Find).
// Otherwise the first job command of a test would build it under that
// command's deadline: minutes on a busy machine with a cold build cache,
// and the command fails for it.
func needContainerCLI(t *testing.T) {
	t.Helper()
	containerCLI.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			containerCLI.err = err
			return
		}
		out := filepath.Join(filepath.Dir(exe), "runbox-linux-"+runtime.GOARCH)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			containerCLI.err = &buildError{err: err, out: string(b)}
		}
	})
	if containerCLI.err != nil {
		t.Fatalf("build the static runbox for sandboxes: %v", containerCLI.err)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
