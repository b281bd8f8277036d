package local_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// TestEnv_RemoveSpillsOnClose: with the option, closing the environment
// deletes the spill files of the results it returned; without it they stay
// for the caller.
func TestEnv_RemoveSpillsOnClose(t *testing.T) {
	for _, remove := range []bool{true, false} {
		env, err := local.New(local.Options{Confine: confine.Off(), SpillDir: t.TempDir(), RemoveSpillsOnClose: remove, NoContainment: true})
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, env, envs.Command{Shell: "seq 5000; seq 3000 >&2", OutputLimit: 100, SeparateStreams: true})
		if res.SpillPath == "" || res.StderrSpillPath == "" {
			t.Fatalf("no spill files: %+v", res)
		}
		if err := env.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for _, p := range []string{res.SpillPath, res.StderrSpillPath} {
			_, err := os.Stat(p)
			if gone := errors.Is(err, fs.ErrNotExist); gone != remove {
				t.Errorf("RemoveSpillsOnClose=%v: spill %s gone=%v (%v)", remove, p, gone, err)
			}
		}
	}
}

// TestNew_BadDirIsDirError: a working directory that cannot be entered is
// an *envs.DirError (front ends map it to exit 126) that still unwraps to
// the cause.
func TestNew_BadDirIsDirError(t *testing.T) {
	file := t.TempDir() + "/f"
	os.WriteFile(file, nil, 0o600)
	for _, dir := range []string{"/runbox-missing-dir", file} {
		_, err := local.New(local.Options{Confine: confine.Off(), Dir: dir})
		var de *envs.DirError
		if !errors.As(err, &de) || de.Dir != dir {
			t.Errorf("New(Dir: %s) = %v; want an *envs.DirError for it", dir, err)
		}
	}
	_, err := local.New(local.Options{Confine: confine.Off(), Dir: "/runbox-missing-dir"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New on a missing dir: %v does not match fs.ErrNotExist", err)
	}
}
