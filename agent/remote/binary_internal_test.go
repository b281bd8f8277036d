package remote

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testproc"
)

// TestProgram_FindTakesRunningStaticBuild: a running static build of the
// agent's main package is taken as the agent whatever its file is called,
// with nothing built (the source tree given here does not exist, so a
// build would fail), and it is not taken for a program it does not serve.
// Without this, the README's static runbox would rebuild (or copy) another
// agent for every container.
func TestProgram_FindTakesRunningStaticBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	built, err := Agent().Find(ctx, runtime.GOARCH, "")
	if err != nil {
		t.Fatalf("find the agent: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "renamed-build")
	testproc.CopyFile(t, built, exe)
	noSource := filepath.Join(t.TempDir(), "no-such-tree")

	if !Agent().Is(exe) {
		t.Fatalf("Agent().Is(%s) = false for a runbox-agent build", exe)
	}
	if CLI().Is(exe) {
		t.Fatalf("CLI().Is = true for a runbox-agent build: the CLI's job commands would run the agent")
	}
	got, err := Agent().find(ctx, exe, runtime.GOARCH, noSource)
	if err != nil || got != exe {
		t.Fatalf("Agent().find with the build running = %q, %v; want %q itself", got, err, exe)
	}
	if got, err := CLI().find(ctx, exe, runtime.GOARCH, noSource); err == nil {
		t.Fatalf("CLI().find with an agent build running = %q; want an error (no CLI, no source to build one)", got)
	}
	if self, err := os.Executable(); err == nil && Agent().Is(self) {
		t.Errorf("Agent().Is(the test binary) = true")
	}
}

// TestPruneBuilds_KeepsTheNewest: pruning after a build keeps that build
// and the newest others (programs side by side each keep theirs), and
// removes the oldest and nothing that is not a build.
func TestPruneBuilds_KeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "runbox-linux-amd64-for-")
	now := time.Now()
	for i := range 6 {
		p := prefix + string(rune('a'+i))
		if err := os.WriteFile(p, nil, 0o700); err != nil {
			t.Fatal(err)
		}
		// a is the newest, f the oldest.
		at := now.Add(-time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{prefix + "x.tmp", filepath.Join(dir, "other")} {
		if err := os.WriteFile(p, nil, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pruneBuilds(prefix, prefix+"f")
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"other", "runbox-linux-amd64-for-a", "runbox-linux-amd64-for-b", "runbox-linux-amd64-for-c", "runbox-linux-amd64-for-f", "runbox-linux-amd64-for-x.tmp"}
	if !slices.Equal(left, want) {
		t.Errorf("after pruning: %q; want %q", left, want)
	}
}
