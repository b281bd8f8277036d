package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/runbox/runbox/envs"
)

// Kind is what a change does to the local tree.
type Kind string

// The kinds of [Change].
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
	// Conflict: changed in the sandbox and, differently, locally.
	Conflict Kind = "conflict"
)

// Change is one path the sandbox changed since the last push.
type Change struct {
	Path string
	Kind Kind
	// Base is the pushed entry, Ours the local one now, Theirs the
	// sandbox's now; nil means absent.
	Base, Ours, Theirs *Entry
	// Protected is set when the path is on the protected list: it is
	// shown but never applied.
	Protected bool
	// Refused says why the change is never applied, "" when it may be:
	// a path git, a hook manager or a shell here would act on (Apply
	// skips it, see [ErrRefused]), or a link that resolves out of the
	// directory or into such a path (Apply refuses to run while it is
	// selected, see [ErrUnsafePath]).
	Refused string

	refusal error  // ErrRefused or ErrUnsafePath when Refused is set
	theirs  []byte // the sandbox's content of a file
	ours    []byte // the local content, read by Compare
}

// Comparison is the result of [Compare]: the sandbox's changes, ready to
// show or apply.
type Comparison struct {
	// Manifest is the base the comparison was made against.
	Manifest *Manifest
	// Changes are sorted by path.
	Changes []*Change
	// Unsafe are names in the sandbox's tree that could never be written
	// locally (absolute, ".."); they are reported, not applied.
	Unsafe []string
	// BaseLost says why the manifest is not the base of the sandbox's
	// tree (its container was made again, say; see [MarkerName]); empty
	// when it is. Without a base nothing is taken for a deletion, a file
	// both sides hold with different content is a [Conflict], and an
	// apply records no new base.
	BaseLost string

	opts Options
	// localLinks are the local tree's links when compared: an apply
	// checks that none of them comes to lead out through a new link.
	localLinks Tree
}

// Compare loads the task's manifest from stateDir and compares it with
// the sandbox's tree in env and the local tree now. Directories take no
// part: a change is a file or a link added, modified or deleted.
func Compare(ctx context.Context, env envs.Environment, stateDir, task string) (*Comparison, error) {
	m, err := Load(stateDir, task)
	if err != nil {
		return nil, err
	}
	o := m.options(stateDir)
	if o.Protected == nil {
		o.Protected = []string{}
	}
	base := m.tree()
	ours, ignore, _, err := scanLocal(&o, m)
	if err != nil {
		return nil, err
	}
	theirs, err := readRemote(ctx, env, o.Remote, ignore, o.MaxBytes)
	if err != nil {
		return nil, err
	}
	protect := newMatcher(o.Protected)
	c := &Comparison{Manifest: m, Unsafe: theirs.unsafe, opts: o, localLinks: Tree{}}
	if m.ID == "" || theirs.id != m.ID {
		c.BaseLost = fmt.Sprintf("the sandbox's %s is not the tree last pushed (%s): nothing there is taken for a deletion, and a file that differs from yours is a conflict", o.Remote, remoteState{id: theirs.id, empty: len(theirs.entries) == 0}.why())
		base = Tree{}
	}
	for p, e := range ours {
		if e.Type == TypeSymlink {
			c.localLinks[p] = e
		}
	}
	paths := map[string]bool{}
	for _, t := range []Tree{base, ours, theirs.entries} {
		for p, e := range t {
			if e.Type != TypeDir {
				paths[p] = true
			}
		}
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	for p := range paths {
		b, o, t := fileOnly(base[p]), fileOnly(ours[p]), fileOnly(theirs.entries[p])
		if same(t, b) || same(o, t) {
			continue // the sandbox did not change it, or both made the same change
		}
		ch := &Change{Path: p, Base: b, Ours: o, Theirs: t, theirs: theirs.content[p]}
		switch {
		case !same(o, b):
			ch.Kind = Conflict
		case t == nil:
			ch.Kind = Deleted
		case o == nil:
			ch.Kind = Added
		default:
			ch.Kind = Modified
		}
		ch.Protected = protect.matchPath(p, false)
		if o != nil && o.Type == TypeFile {
			if ch.ours, err = readIn(root, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("workspace: read %s: %w", p, err)
			}
		}
		c.Changes = append(c.Changes, ch)
	}
	sort.Slice(c.Changes, func(i, j int) bool { return c.Changes[i].Path < c.Changes[j].Path })
	if err := c.refuse(root, theirs.entries); err != nil {
		return nil, err
	}
	return c, nil
}

// refuse marks the changes that must never be applied: by name (see
// hostRefusal), under a directory git would take for a repository (in
// the sandbox's tree or here), and links that, with every other change
// applied, resolve out of the directory or to a refused path.
func (c *Comparison) refuse(root *os.Root, theirs Tree) error {
	gitDirs := map[string]bool{}
	has := func(p string) bool {
		if theirs[p] != nil {
			return true
		}
		_, err := root.Lstat(p)
		return err == nil
	}
	underGitDir := func(p string) bool {
		for d := path.Dir(p); ; d = path.Dir(d) {
			is, ok := gitDirs[d]
			if !ok {
				is = gitDirLike(d, has)
				gitDirs[d] = is
			}
			if is {
				return true
			}
			if d == "." {
				return false
			}
		}
	}
	hooks := hooksPath(root, c.opts.Dir)
	over := map[string]*Entry{}
	for _, ch := range c.Changes {
		switch why := hostRefusal(ch.Path); {
		case why != "":
			ch.Refused, ch.refusal = why, ErrRefused
		case under(ch.Path, hooks):
			ch.Refused, ch.refusal = reasonHooks, ErrRefused
		case underGitDir(ch.Path):
			ch.Refused, ch.refusal = reasonGitDir, ErrRefused
		default:
			over[ch.Path] = ch.Theirs
		}
	}
	v := newView(root, over)
	for _, ch := range c.Changes {
		if ch.Refused != "" || ch.Theirs == nil || ch.Theirs.Type != TypeSymlink {
			continue
		}
		why, err := v.linkRefusal(ch.Path, ch.Theirs.Link)
		if err != nil {
			return err
		}
		if why != "" {
			ch.Refused, ch.refusal = why, ErrUnsafePath
		}
	}
	return nil
}

// Protect adds gitignore-style patterns to the protected list for this
// comparison: the changes they match are shown but never applied. It lets
// a caller protect what it knows now (the configuration in force, where
// its configuration file lies) on top of what was recorded at the push.
func (c *Comparison) Protect(patterns ...string) {
	m := newMatcher(patterns)
	for _, ch := range c.Changes {
		if m.matchPath(ch.Path, false) {
			ch.Protected = true
		}
	}
}

// fileOnly drops directory entries: they take no part in changes.
func fileOnly(e *Entry) *Entry {
	if e == nil || e.Type == TypeDir {
		return nil
	}
	return e
}

// selected reports whether p is one of paths or under one of them.
func selected(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, s := range paths {
		s = strings.TrimSuffix(path.Clean(s), "/")
		if s == "." || p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// ChangeReport is a change as the CLI's --json and the server's sync tool
// show it: the path as a JSON string (or base64 when it is not UTF-8),
// and the unified diff.
type ChangeReport struct {
	Path      string `json:"path,omitempty"`
	PathB64   string `json:"path_b64,omitempty"`
	Kind      Kind   `json:"kind"`
	Binary    bool   `json:"binary"`
	Protected bool   `json:"protected,omitempty"`
	// Refused is [Change.Refused]: why apply never writes it.
	Refused string `json:"refused,omitempty"`
	Diff    string `json:"diff"`
}

// Reports returns every change as a ChangeReport, in order (an empty
// slice, never nil, when there is none).
func (c *Comparison) Reports() []ChangeReport {
	out := make([]ChangeReport, 0, len(c.Changes))
	for _, ch := range c.Changes {
		r := ChangeReport{Kind: ch.Kind, Binary: ch.Binary(), Protected: ch.Protected, Refused: ch.Refused, Diff: ch.Diff()}
		r.Path, r.PathB64 = EncodePath(ch.Path)
		out = append(out, r)
	}
	return out
}
