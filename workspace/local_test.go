package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/workspace"
)

// TestPush_TarFallbackOnLocal: a backend without its own tree transfer
// (the local one, standing in for any backend that streams output) moves
// trees with tar run inside it; the whole cycle — push, sandbox edits,
// compare, apply, incremental push — works through it, with no docker.
func TestPush_TarFallbackOnLocal(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		integration.Skip(t, "no tar: %v", err)
	}
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	if _, ok := envs.Environment(env).(envs.TreeTransfer); ok {
		t.Fatal("local has its own TreeTransfer: this test no longer covers the fallback")
	}
	dir := makeTree(t)
	remote := filepath.Join(t.TempDir(), "sandbox", "ws")
	o := opts(t, dir)
	o.Remote = remote
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if !rep.Full {
		t.Error("first push not full")
	}
	for _, p := range []string{"hello.txt", nonUTF8, "name with spaces.txt", "bin.dat"} {
		a, _ := os.ReadFile(filepath.Join(dir, p))
		b, err := os.ReadFile(filepath.Join(remote, p))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%q in the sandbox: %v, equal=%v", p, err, bytes.Equal(a, b))
		}
	}
	if l, err := os.Readlink(filepath.Join(remote, "link-in")); err != nil || l != "hello.txt" {
		t.Errorf("link-in in the sandbox = %q, %v", l, err)
	}
	for _, p := range []string{".git", "build", "main.o", "link-abs", "link-up"} {
		if _, err := os.Lstat(filepath.Join(remote, p)); err == nil {
			t.Errorf("%s was pushed", p)
		}
	}
	// The "sandbox" edits its copy.
	must(t, os.WriteFile(filepath.Join(remote, "hello.txt"), []byte("rewritten\n"), 0o644))
	must(t, os.Remove(filepath.Join(remote, "deleteme.txt")))
	must(t, os.WriteFile(filepath.Join(remote, "added.txt"), []byte("added\n"), 0o755))
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if len(c.Changes) != 3 || len(c.Unsafe) != 0 {
		t.Fatalf("changes = %d (%v), unsafe %q; want 3", len(c.Changes), c.Changes, c.Unsafe)
	}
	if _, err := c.Apply(t.Context(), workspace.ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "rewritten\n" {
		t.Errorf("hello.txt = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(dir, "added.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("added.txt: %v %v", fi, err)
	}
	// A local edit goes out incrementally.
	must(t, os.WriteFile(filepath.Join(dir, "script.sh"), []byte("echo changed\n"), 0o644))
	rep, err = workspace.Push(t.Context(), env, o)
	if err != nil || rep.Full || len(rep.Sent) != 1 || rep.Sent[0] != "script.sh" {
		t.Fatalf("incremental push = %+v, %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(remote, "script.sh")); string(b) != "echo changed\n" {
		t.Errorf("script.sh in the sandbox = %q", b)
	}
	// A comparison made before another push is stale: applying it would
	// record a base that is no longer the sandbox's.
	must(t, os.WriteFile(filepath.Join(remote, "hello.txt"), []byte("again\n"), 0o644))
	stale, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "script.sh"), []byte("echo third\n"), 0o644))
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if _, err := stale.Apply(t.Context(), workspace.ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "compare again") {
		t.Errorf("Apply of a stale comparison = %v; want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "rewritten\n" {
		t.Errorf("a stale apply wrote hello.txt: %q", b)
	}
}

// TestPush_FailedFullPushForgetsStaleBase: when a full push replaces the
// sandbox's directory (here: it vanished, as in a new container) and
// fails, the old manifest is gone with it, so nothing can later read the
// files that never arrived as deletions; the next push is full again.
func TestPush_FailedFullPushForgetsStaleBase(t *testing.T) {
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	dir := makeTree(t)
	o := opts(t, dir)
	o.Remote = filepath.Join(t.TempDir(), "ws")
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	must(t, os.RemoveAll(o.Remote))
	// The sandbox's directory cannot be made: its parent is a file.
	must(t, os.WriteFile(filepath.Dir(o.Remote)+"/blocker", nil, 0o644))
	bad := o
	bad.Remote = filepath.Join(filepath.Dir(o.Remote), "blocker", "ws")
	if _, err := workspace.Push(t.Context(), env, bad); err == nil {
		t.Fatal("Push into a path under a file succeeded")
	}
	if _, err := workspace.Load(o.StateDir, o.Task); !errors.Is(err, workspace.ErrNoManifest) {
		t.Errorf("after a failed full push, Load = %v; want ErrNoManifest", err)
	}
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil || !rep.Full {
		t.Errorf("next push = %+v, %v; want a full push", rep, err)
	}
}

// TestPush_HoldsConflicts: a file changed both locally and in the sandbox
// since the last push is not sent (the sandbox's edit survives), a file
// deleted locally but changed in the sandbox is not deleted there, and
// both show as conflicts in the comparison.
func TestPush_HoldsConflicts(t *testing.T) {
	env, err := local.New(local.Options{Confine: confine.Off(), Grace: 300 * time.Millisecond, Dir: t.TempDir(), NoContainment: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	dir := makeTree(t)
	o := opts(t, dir)
	o.Remote = filepath.Join(t.TempDir(), "ws")
	if _, err := workspace.Push(t.Context(), env, o); err != nil {
		t.Fatalf("Push: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(o.Remote, "hello.txt"), []byte("sandbox\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(o.Remote, "deleteme.txt"), []byte("sandbox keeps me\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("local\n"), 0o644))
	must(t, os.Remove(filepath.Join(dir, "deleteme.txt")))
	must(t, os.WriteFile(filepath.Join(dir, "script.sh"), []byte("local only\n"), 0o644))
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if strings.Join(rep.Conflicts, ",") != "deleteme.txt,hello.txt" || strings.Join(rep.Sent, ",") != "script.sh" || len(rep.Deleted) != 0 {
		t.Errorf("push = %+v; want conflicts deleteme.txt, hello.txt and only script.sh sent", rep)
	}
	for name, want := range map[string]string{"hello.txt": "sandbox\n", "deleteme.txt": "sandbox keeps me\n", "script.sh": "local only\n"} {
		if b, _ := os.ReadFile(filepath.Join(o.Remote, name)); string(b) != want {
			t.Errorf("sandbox %s = %q; want %q", name, b, want)
		}
	}
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	got := map[string]workspace.Kind{}
	for _, ch := range c.Changes {
		got[ch.Path] = ch.Kind
	}
	if len(got) != 2 || got["hello.txt"] != workspace.Conflict || got["deleteme.txt"] != workspace.Conflict {
		t.Errorf("changes = %v; want two conflicts", got)
	}
}
