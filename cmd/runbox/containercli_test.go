package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// staticBuilds are the static programs built beside this test binary,
// once each, by name.
var staticBuilds struct {
	mu   sync.Mutex
	errs map[string]error
}

// needContainerCLI builds a static runbox beside this test binary, as
// runbox-linux-<arch>, where the backends look first (remote.Program.Find).
// Otherwise the first job command of a test would build it under that
// command's deadline: minutes on a busy machine with a cold build cache,
// and the command fails for it.
func needContainerCLI(t *testing.T) { needStatic(t, "runbox", ".") }

// needAgent builds the static runbox-agent beside this test binary, for a
// runbox started as a separate process (runbox serve) in a directory
// outside the source tree, where it could not build one.
func needAgent(t *testing.T) { needStatic(t, "runbox-agent", "../runbox-agent") }

// needStatic builds the package pkg as a static name-linux-<arch> beside
// this test binary, once.
func needStatic(t *testing.T, name, pkg string) {
	t.Helper()
	staticBuilds.mu.Lock()
	defer staticBuilds.mu.Unlock()
	err, done := staticBuilds.errs[name]
	if !done {
		err = buildStatic(name, pkg)
		if staticBuilds.errs == nil {
			staticBuilds.errs = map[string]error{}
		}
		staticBuilds.errs[name] = err
	}
	if err != nil {
		t.Fatalf("build the static %s for sandboxes: %v", name, err)
	}
}

func buildStatic(name, pkg string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	out := filepath.Join(filepath.Dir(exe), name+"-linux-"+runtime.GOARCH)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return &buildError{err: err, out: string(b)}
	}
	return nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
