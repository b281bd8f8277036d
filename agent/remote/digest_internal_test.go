package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testproc"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestFileDigest_CachedUntilTheFileChanges: the digest of an unchanged
// file comes from the user's cache (the entry is rewritten here to prove
// it is read, not recomputed), and a file rewritten in place — same size,
// modification time set back — is hashed again: its change time moved.
func TestFileDigest_CachedUntilTheFileChanges(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, []byte("first build"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FileDigest(p)
	if err != nil || got != sha([]byte("first build")) {
		t.Fatalf("FileDigest = %q, %v; want the SHA-256 of the content", got, err)
	}
	entry := digestEntry(p)
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("no cache entry: %v", err)
	}
	marked := strings.Repeat("0", 64)
	key, _, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(entry, []byte(key+"\n"+marked), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := FileDigest(p); got != marked {
		t.Fatalf("FileDigest of an unchanged file = %q; want the cached %q", got, marked)
	}

	fi, _ := os.Stat(p)
	time.Sleep(10 * time.Millisecond) // a change time that differs even on a coarse clock
	if err := os.WriteFile(p, []byte("other build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got, _ := FileDigest(p); got != sha([]byte("other build")) {
		t.Fatalf("FileDigest after a same-size rewrite = %q; want the new content's", got)
	}
}

// TestProgram_FindSmallPrefersTheAgentBuild: a host that uploads the
// agent gets the small runbox-agent beside the running program rather
// than the program itself, even when the program is a static build that
// serves as the agent; without one beside it, the agent is built from
// the source tree once for that program and then found without the go
// tool (PATH emptied: a second build would fail).
func TestProgram_FindSmallPrefersTheAgentBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("RUNBOX_STATE_DIR", t.TempDir())
	root := findModule()
	if root == "" {
		t.Fatal("no runbox module above the test's directory")
	}
	// The running "program": this test binary, which is not the agent.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	built, err := Agent().findSmall(ctx, self, runtime.GOARCH, root)
	if err != nil {
		t.Fatalf("findSmall: %v", err)
	}
	if !strings.HasPrefix(built, os.Getenv("XDG_CACHE_HOME")) || !Agent().dedicated(built) || CheckStatic(built, runtime.GOARCH) != nil {
		t.Fatalf("findSmall = %q; want a static runbox-agent build in the cache", built)
	}
	t.Setenv("PATH", "")
	again, err := Agent().findSmall(ctx, self, runtime.GOARCH, root)
	if err != nil || again != built {
		t.Fatalf("findSmall without the go tool = %q, %v; want the build made before, %q", again, err, built)
	}

	// The cached build rewritten in place, its size and modification
	// time kept (as a confined command can, the cache being writable):
	// runbox no longer takes it, neither for this program nor as the
	// latest build.
	rewriteKeepingTimes(t, built)
	if got, err := Agent().findSmall(ctx, self, runtime.GOARCH, root); err == nil {
		t.Fatalf("findSmall after the cached build was rewritten = %q; want a refusal (no go tool to build again)", got)
	}
	if got, err := Agent().find(ctx, self, runtime.GOARCH, ""); err == nil || !errors.Is(err, errUntrusted) { // no source tree
		t.Fatalf("find without a source tree after the latest build was rewritten = %q, %v; want it refused", got, err)
	}

	// A program with the agent build beside it: that one is taken.
	dir := t.TempDir()
	prog, side := filepath.Join(dir, "runbox"), filepath.Join(dir, "runbox-agent")
	testproc.CopyFile(t, built, side)
	testproc.CopyFile(t, self, prog)
	if got, err := Agent().findSmall(ctx, prog, runtime.GOARCH, root); err != nil || got != side {
		t.Fatalf("findSmall with runbox-agent beside = %q, %v; want %q", got, err, side)
	}
}

// rewriteKeepingTimes overwrites the first bytes of the file at path with
// their own complement and sets its modification time back.
func rewriteKeepingTimes(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	f.ReadAt(b, 4096)
	for i := range b {
		b[i] = ^b[i]
	}
	if _, err := f.WriteAt(b, 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestFindModule_NotFromTheWorkingDirectory: the source tree runbox
// builds its agent from is the one it was built from, never a runbox
// go.mod found from the working directory, which a confined command can
// write (a go.mod naming runbox's module and a cmd/runbox-agent of its
// own: runbox built it, unconfined, and ran it as its agent on the
// user's ssh host). Breaks if findModule looks at the working directory
// again.
func TestFindModule_NotFromTheWorkingDirectory(t *testing.T) {
	real := findModule()
	if real == "" {
		t.Fatal("no source tree for this test binary: built with -trimpath?")
	}
	planted := t.TempDir()
	if err := os.WriteFile(filepath.Join(planted, "go.mod"), []byte("module github.com/runbox/runbox\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(planted, "cmd", "runbox-agent", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(planted, "cmd", "runbox-agent", "deep"))
	if got := findModule(); got != real {
		t.Errorf("findModule() from a planted tree = %q; want the tree this binary was built from, %q", got, real)
	}
}
