package workspace_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/workspace"
)

// TestSync_ReplacedSandboxLosesNothing protects the promise that a
// sandbox tree runbox did not push (the task's container made again, an
// image changed, the directory emptied or swapped) never costs the user
// a file: the comparison infers no deletion from it, an apply leaves
// every local file, and the next push moves what the sandbox held aside
// instead of deleting it. The control row keeps the tree runbox pushed,
// where a deletion in the sandbox is inferred as before: the test sees
// deletions when there are some.
func TestSync_ReplacedSandboxLosesNothing(t *testing.T) {
	files := map[string]string{"important.txt": "my work\n", "hello.txt": "local\n", "sub/inner.txt": "inner\n"}
	for _, tc := range []struct {
		name string
		// replace does to the sandbox's directory what happened to it.
		replace func(t *testing.T, remote string)
		// lost: the comparison must say it has no base; aside: the next
		// push must move the directory aside (it held something).
		lost, aside bool
	}{
		{"Kept", func(t *testing.T, remote string) {
			must(t, os.Remove(filepath.Join(remote, "important.txt")))
		}, false, false},
		{"ContainerMadeAgain", func(t *testing.T, remote string) {
			must(t, os.RemoveAll(remote))
		}, true, false},
		{"Emptied", func(t *testing.T, remote string) {
			must(t, os.RemoveAll(remote))
			must(t, os.Mkdir(remote, 0o755))
		}, true, false},
		{"OtherImage", func(t *testing.T, remote string) {
			must(t, os.RemoveAll(remote))
			writeFiles(t, remote, map[string]string{"hello.txt": "from the image\n", "image.txt": "image\n"})
		}, true, true},
		{"MarkerRemoved", func(t *testing.T, remote string) {
			must(t, os.Remove(filepath.Join(remote, workspace.MarkerName)))
		}, true, true},
		{"MarkerOfAnotherPush", func(t *testing.T, remote string) {
			must(t, os.WriteFile(filepath.Join(remote, workspace.MarkerName), []byte("runbox-sync OTHER\n"), 0o644))
			must(t, os.Remove(filepath.Join(remote, "important.txt")))
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := localEnv(t)
			dir := filepath.Join(t.TempDir(), "proj")
			writeFiles(t, dir, files)
			o := opts(t, dir)
			o.Remote = filepath.Join(t.TempDir(), "sandbox", "ws")
			if _, err := workspace.Push(t.Context(), env, o); err != nil {
				t.Fatalf("Push: %v", err)
			}
			tc.replace(t, o.Remote)

			c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			kinds := map[string]workspace.Kind{}
			for _, ch := range c.Changes {
				kinds[ch.Path] = ch.Kind
			}
			if (c.BaseLost != "") != tc.lost {
				t.Fatalf("BaseLost = %q; want one: %v", c.BaseLost, tc.lost)
			}
			if !tc.lost {
				if kinds["important.txt"] != workspace.Deleted {
					t.Fatalf("control: changes %v; want important.txt deleted", kinds)
				}
				return
			}
			for p, k := range kinds {
				if k == workspace.Deleted {
					t.Errorf("%s taken for a deletion in a tree runbox did not push (changes %v)", p, kinds)
				}
			}
			if tc.name == "OtherImage" && (kinds["hello.txt"] != workspace.Conflict || kinds["image.txt"] != workspace.Added) {
				t.Errorf("changes %v; want hello.txt a conflict and image.txt added", kinds)
			}
			rep, err := c.Apply(t.Context(), workspace.ApplyOptions{Theirs: true})
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if len(rep.Deleted) != 0 {
				t.Errorf("Apply deleted %q", rep.Deleted)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "important.txt")); err != nil || string(b) != "my work\n" {
				t.Errorf("important.txt after apply: %q, %v; want the user's work", b, err)
			}

			push, err := workspace.Push(t.Context(), env, o)
			if err != nil {
				t.Fatalf("next Push: %v", err)
			}
			if !push.Full || push.Replaced == "" || (push.MovedAside != "") != tc.aside {
				t.Fatalf("next push: full %v, replaced %q, moved aside %q; want a full push that says why, moved aside: %v", push.Full, push.Replaced, push.MovedAside, tc.aside)
			}
			if tc.aside {
				if !strings.HasPrefix(push.MovedAside, o.Remote+".runbox-before-") {
					t.Errorf("moved aside to %s; want beside %s", push.MovedAside, o.Remote)
				}
				if _, err := os.Stat(filepath.Join(push.MovedAside, "hello.txt")); err != nil {
					t.Errorf("what the sandbox held is not kept at %s: %v", push.MovedAside, err)
				}
			}
			// The pushed tree is known again: no changes, and a deletion
			// in it is one.
			if c := compareAgain(t, env, o); c.BaseLost != "" || len(c.Changes) != 0 {
				t.Fatalf("after the full push: base lost %q, changes %v; want none", c.BaseLost, c.Changes)
			}
			must(t, os.Remove(filepath.Join(o.Remote, "sub", "inner.txt")))
			if c := compareAgain(t, env, o); len(c.Changes) != 1 || c.Changes[0].Kind != workspace.Deleted {
				t.Errorf("after a deletion in the known tree: %v; want sub/inner.txt deleted", c.Changes)
			}
		})
	}
}

// TestSync_ManifestWithoutIdentity: a manifest from before markers is the
// base of no tree; the next push is full, keeps what the sandbox held,
// and a local file named like the marker is never sent for it.
func TestSync_ManifestWithoutIdentity(t *testing.T) {
	env := localEnv(t)
	dir := filepath.Join(t.TempDir(), "proj")
	writeFiles(t, dir, map[string]string{"a.txt": "a\n", workspace.MarkerName: "runbox-sync FORGED\n"})
	o := opts(t, dir)
	o.Remote = filepath.Join(t.TempDir(), "sandbox", "ws")
	rep, err := workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if !slices.ContainsFunc(rep.Skipped, func(s string) bool { return strings.HasPrefix(s, workspace.MarkerName) }) {
		t.Errorf("skipped %q; want the local %s left out", rep.Skipped, workspace.MarkerName)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Remote, workspace.MarkerName)); strings.Contains(string(b), "FORGED") {
		t.Errorf("the local %s was sent as the marker", workspace.MarkerName)
	}
	p := filepath.Join(o.StateDir, "sync", o.Task+".json")
	b, err := os.ReadFile(p)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	if m["id"] == nil {
		t.Fatalf("manifest %s holds no id", b)
	}
	delete(m, "id")
	b, err = json.Marshal(m)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o600))
	if c := compareAgain(t, env, o); c.BaseLost == "" {
		t.Errorf("a manifest without id compared as the tree's base")
	}
	rep, err = workspace.Push(t.Context(), env, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if !rep.Full || rep.MovedAside == "" {
		t.Errorf("push after a manifest without id: %+v; want full, the old tree moved aside", rep)
	}
}

// compareAgain compares the sandbox's tree with o's manifest.
func compareAgain(t *testing.T, env envs.Environment, o workspace.Options) *workspace.Comparison {
	t.Helper()
	c, err := workspace.Compare(t.Context(), env, o.StateDir, o.Task)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return c
}
