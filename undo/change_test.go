package undo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/undo"
)

// base is the tree every case starts from.
var base = map[string]string{
	"a.txt":       "alpha\n",
	"b.txt":       "bravo\n",
	"d/x.txt":     "x\n",
	"d/y/z.txt":   "z\n",
	"link":        "-> a.txt",
	"empty/":      "",
	"src/main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
}

// TestUndo_RestoresEachKindOfChange makes one kind of change per case
// inside a command, checks the record describes it, undoes it and
// compares the tree with a snapshot taken before, times included. It
// breaks if a kind is recorded wrongly, or undo misses a byte, a mode, a
// link target, a type, or a modification time.
func TestUndo_RestoresEachKindOfChange(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, root string) // after the base tree, before the snapshot
		change func(t *testing.T, root string)
		want   []string // kinds(record.Changes)
		git    bool
	}{{
		name: "create",
		change: func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "d/new.txt"), []byte("new"), 0o600))
		},
		want: []string{"d/new.txt created file"},
	}, {
		name: "modify in place",
		change: func(t *testing.T, root string) {
			f, err := os.OpenFile(filepath.Join(root, "a.txt"), os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt([]byte("ALPHA"), 0)
			must(t, err)
			must(t, f.Close())
		},
		want: []string{"a.txt modified file"},
	}, {
		name:   "truncate",
		change: func(t *testing.T, root string) { must(t, os.Truncate(filepath.Join(root, "src/main.go"), 3)) },
		want:   []string{"src/main.go modified file"},
	}, {
		name:   "delete file",
		change: func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, "b.txt"))) },
		want:   []string{"b.txt deleted file"},
	}, {
		name:   "delete tree",
		change: func(t *testing.T, root string) { must(t, os.RemoveAll(filepath.Join(root, "d"))) },
		want:   []string{"d deleted dir", "d/x.txt deleted file", "d/y deleted dir", "d/y/z.txt deleted file"},
	}, {
		name: "rename",
		change: func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "d/x.txt"), filepath.Join(root, "x-moved.txt")))
		},
		want: []string{"x-moved.txt renamed file <-d/x.txt"},
	}, {
		name:   "chmod",
		change: func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "b.txt"), 0o755)) },
		want:   []string{"b.txt mode file"},
	}, {
		name:   "chmod directory",
		change: func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "d/y"), 0o700)) },
		want:   []string{"d/y mode dir"},
	}, {
		name: "file to directory",
		change: func(t *testing.T, root string) {
			p := filepath.Join(root, "b.txt")
			must(t, os.Remove(p))
			must(t, os.Mkdir(p, 0o755))
			must(t, os.WriteFile(filepath.Join(p, "inner"), []byte("in"), 0o644))
		},
		want: []string{"b.txt type dir", "b.txt/inner created file"},
	}, {
		name: "directory to symlink",
		change: func(t *testing.T, root string) {
			must(t, os.RemoveAll(filepath.Join(root, "d")))
			must(t, os.Symlink("src", filepath.Join(root, "d")))
		},
		want: []string{"d type symlink", "d/x.txt deleted file", "d/y deleted dir", "d/y/z.txt deleted file"},
	}, {
		name: "symlink retarget",
		change: func(t *testing.T, root string) {
			p := filepath.Join(root, "link")
			must(t, os.Remove(p))
			must(t, os.Symlink("b.txt", p))
		},
		want: []string{"link modified symlink"},
	}, {
		name:   "fifo created",
		change: func(t *testing.T, root string) { mkfifo(t, filepath.Join(root, "d/pipe")) },
		want:   []string{"d/pipe created other"},
	}, {
		name:   "fifo deleted",
		setup:  func(t *testing.T, root string) { mkfifo(t, filepath.Join(root, "pipe")) },
		change: func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, "pipe"))) },
		want:   []string{"pipe deleted other"},
	}, {
		name: "hard link",
		change: func(t *testing.T, root string) {
			must(t, os.Link(filepath.Join(root, "a.txt"), filepath.Join(root, "d/a-link")))
		},
		want: []string{"d/a-link created file"},
	}, {
		name: "touch",
		change: func(t *testing.T, root string) {
			future := time.Now().Add(time.Hour)
			must(t, os.Chtimes(filepath.Join(root, "a.txt"), future, future))
			must(t, os.Chtimes(filepath.Join(root, "d/y"), future, future))
			must(t, os.Chmod(filepath.Join(root, "b.txt"), 0o600))
		},
		want: []string{"b.txt mode file"}, // times are restored, not listed
	}, {
		name:   "rewrite with the same content",
		change: func(t *testing.T, root string) { run(t, root, "cp a.txt tmp && mv tmp a.txt && echo >> b.txt") },
		want:   []string{"b.txt modified file"},
	}, {
		name:   "sed -i",
		change: func(t *testing.T, root string) { run(t, root, "sed -i 's/hello/bye/' src/main.go") },
		want:   []string{"src/main.go modified file"},
	}, {
		name: "sh -c generator",
		change: func(t *testing.T, root string) {
			run(t, root, "for f in a b c; do echo $f > gen-$f.txt; done; rm -r d/y; echo more >> b.txt")
		},
		want: []string{"b.txt modified file", "d/y deleted dir", "d/y/z.txt deleted file", "gen-a.txt created file", "gen-b.txt created file", "gen-c.txt created file"},
	}, {
		name: "git checkout .",
		git:  true,
		setup: func(t *testing.T, root string) {
			run(t, root, "git init -q && git add -A && git commit -qm init && echo 'uncommitted work' >> a.txt && rm b.txt")
		},
		change: func(t *testing.T, root string) { run(t, root, "git checkout .") },
		want:   []string{"a.txt modified file", "b.txt created file"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("git"); tc.git && err != nil {
				t.Skip("git is not installed")
			}
			root := t.TempDir()
			files(t, root, base)
			if tc.setup != nil {
				tc.setup(t, root)
			}
			before := snapshot(t, root)
			j := open(t, root, undo.Options{})
			rec := command(t, j, tc.name, func() { tc.change(t, root) })
			got := slices.DeleteFunc(kinds(rec.Changes), func(s string) bool { return strings.HasPrefix(s, ".git/") })
			if !slices.Equal(got, tc.want) {
				t.Errorf("record changes = %q; want %q", got, tc.want)
			}
			if rec.Step == 0 {
				t.Fatalf("record step = 0; want the command's step")
			}
			done, err := j.Undo(context.Background(), undo.UndoOptions{To: rec.Step})
			if err != nil {
				t.Fatalf("Undo(To: %d) = %v", rec.Step, err)
			}
			if !slices.Equal(done.Commands, []string{tc.name}) {
				t.Errorf("undone commands = %q; want [%q]", done.Commands, tc.name)
			}
			requireSame(t, before, snapshot(t, root), true)
		})
	}
}
