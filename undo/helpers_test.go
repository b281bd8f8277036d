package undo_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/undo"
)

// node is one path of a tree as the tests see it, read without the
// package's help: what undo must bring back byte for byte.
type node struct {
	Type   string
	Mode   fs.FileMode // permission and sticky bits
	Data   string      // regular files
	Target string      // symbolic links
	Mtime  int64       // files and directories, ns
}

// tree maps slash-separated paths below a root to their nodes.
type tree map[string]node

// snapshot reads everything under root (but not root itself), following
// no link. skip leaves out a path and what is under it.
func snapshot(t testing.TB, root string, skip ...string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if slices.Contains(skip, rel) || slices.Contains(skip, d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out[rel], err = readNode(p)
		return err
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return out
}

func readNode(p string) (node, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return node{}, err
	}
	n := node{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSticky), Mtime: fi.ModTime().UnixNano()}
	switch m := fi.Mode(); {
	case m.IsRegular():
		n.Type = "file"
		b, err := os.ReadFile(p)
		n.Data = string(b)
		return n, err
	case m.IsDir():
		n.Type = "dir"
	case m&fs.ModeSymlink != 0:
		n.Type, n.Mtime = "symlink", 0
		n.Target, err = os.Readlink(p)
	case m&fs.ModeNamedPipe != 0:
		n.Type, n.Mtime = "fifo", 0
	default:
		n.Type, n.Mtime = "other", 0
	}
	return n, err
}

// diffTrees lists how got differs from want; times are compared only
// when asked.
func diffTrees(want, got tree, times bool) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s: missing (want %s)", p, w.Type))
			continue
		}
		if !times {
			w.Mtime, g.Mtime = 0, 0
		}
		if w != g {
			out = append(out, fmt.Sprintf("%s: got %s; want %s", p, g.describe(), w.describe()))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("%s: unexpected %s", p, g.Type))
		}
	}
	sort.Strings(out)
	return out
}

func (n node) describe() string {
	data := n.Data
	if len(data) > 40 {
		data = data[:40] + "..."
	}
	return fmt.Sprintf("%s %v data=%q target=%q mtime=%d", n.Type, n.Mode, data, n.Target, n.Mtime)
}

func requireSame(t testing.TB, want, got tree, times bool) {
	t.Helper()
	if d := diffTrees(want, got, times); len(d) > 0 {
		t.Fatalf("tree differs from the snapshot:\n  %s", strings.Join(d, "\n  "))
	}
}

// open opens a journal on root with its state in a fresh directory, and
// closes it when the test ends.
func open(t testing.TB, root string, opts undo.Options) *undo.Journal {
	t.Helper()
	return openAt(t, root, filepath.Join(t.TempDir(), "state"), opts)
}

func openAt(t testing.TB, root, dir string, opts undo.Options) *undo.Journal {
	t.Helper()
	j, err := undo.Open(root, dir, opts)
	if err != nil {
		t.Fatalf("Open(%s, %s) = %v", root, dir, err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// files writes a tree: "dir/" makes a directory, "name -> target" a
// link, anything else a file with that content.
func files(t testing.TB, root string, spec map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := filepath.Join(root, k)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case strings.HasSuffix(k, "/"):
			must(t, os.MkdirAll(p, 0o755))
		case strings.HasPrefix(spec[k], "-> "):
			must(t, os.Symlink(strings.TrimPrefix(spec[k], "-> "), p))
		default:
			must(t, os.WriteFile(p, []byte(spec[k]), 0o644))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run runs a shell command in dir, as an agent's command would.
func run(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
}

// command brackets fn with Begin and End.
func command(t testing.TB, j *undo.Journal, label string, fn func()) *undo.Record {
	t.Helper()
	ctx := context.Background()
	c, err := j.Begin(ctx, label)
	if err != nil {
		t.Fatalf("Begin(%q) = %v", label, err)
	}
	fn()
	rec, err := c.End(ctx)
	if err != nil {
		t.Fatalf("End(%q) = %v", label, err)
	}
	return rec
}

// kinds renders changes compactly for comparisons: "path kind type",
// with "<-from" for renames.
func kinds(cs []undo.Change) []string {
	var out []string
	for _, c := range cs {
		s := c.Path + " " + c.Kind + " " + c.Type
		if c.From != "" {
			s += " <-" + c.From
		}
		out = append(out, s)
	}
	return out
}

func mkfifo(t testing.TB, p string) {
	t.Helper()
	must(t, syscall.Mkfifo(p, 0o644))
}
