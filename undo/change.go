package undo

import (
	"slices"
	"strings"
)

// Kinds of [Change].
const (
	KindCreated  = "created"
	KindModified = "modified" // content (or link target) changed; the mode may have too
	KindDeleted  = "deleted"
	KindRenamed  = "renamed"
	KindMode     = "mode" // only the permission bits changed
	KindType     = "type" // a file became a directory, a link, ...
)

// Types of [Change].
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other" // fifos, sockets, devices
)

// Change describes what happened to one path between two states of the
// workspace. A path whose only change is its modification time is not
// listed (undo still restores the time).
type Change struct {
	Path       string `json:"path"`           // slash-separated, relative to the root
	Kind       string `json:"kind"`           // one of the Kind constants
	From       string `json:"from,omitempty"` // renamed: the old path
	Type       string `json:"type"`           // one of the Type constants (after; for deleted, before)
	Size       int64  `json:"size,omitempty"` // files (after; for deleted, before)
	Mode       string `json:"mode,omitempty"` // octal permission bits like "0644" (after; for deleted, before)
	SizeBefore int64  `json:"size_before,omitempty"`
	ModeBefore string `json:"mode_before,omitempty"` // set when the mode changed
	Target     string `json:"target,omitempty"`      // symbolic link target after
}

// diff is one path's change within a step: its state before and after
// (nil when absent). Steps are stored as lists of diffs.
type diff struct {
	Path   string
	Before *entry
	After  *entry
}

// kind classifies a diff; "" means nothing but times changed.
func (d *diff) kind() string {
	b, a := d.Before, d.After
	switch {
	case b == nil && a == nil:
		return ""
	case b == nil:
		return KindCreated
	case a == nil:
		return KindDeleted
	case b.format() != a.format():
		return KindType
	case !b.sameContent(a):
		return KindModified
	case b.perm() != a.perm():
		return KindMode
	}
	return ""
}

// fold merges diffs in the order they happened into one diff per path:
// the state before the first and after the last. Paths that ended as they
// began (created then deleted) fold to no diff. The result is sorted by
// path.
func fold(steps [][]diff) []diff {
	byPath := map[string]*diff{}
	for _, ds := range steps {
		for _, d := range ds {
			if f, ok := byPath[d.Path]; ok {
				f.After = d.After
				continue
			}
			byPath[d.Path] = &diff{Path: d.Path, Before: d.Before, After: d.After}
		}
	}
	out := make([]diff, 0, len(byPath))
	for _, d := range byPath {
		if d.Before != nil || d.After != nil {
			out = append(out, *d)
		}
	}
	slices.SortFunc(out, func(x, y diff) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// describe turns diffs into changes (pairing renames), sorted by path,
// at most max of them with the rest counted, and lists the files whose
// content, before or after, the journal does not keep.
func describe(ds []diff, max int) (changes []Change, more int, notKept []string) {
	for _, d := range ds {
		k := d.kind()
		if k == "" {
			continue
		}
		changes = append(changes, change(&d, k))
		if missingContent(&d, k) && len(notKept) < max {
			notKept = append(notKept, d.Path)
		}
	}
	changes = pairRenames(changes, ds)
	if len(changes) > max {
		more = len(changes) - max
		changes = changes[:max]
	}
	return changes, more, notKept
}

func missingContent(d *diff, kind string) bool {
	before := d.Before != nil && d.Before.isFile() && !d.Before.Kept && kind != KindCreated && kind != KindMode
	after := d.After != nil && d.After.isFile() && !d.After.Kept
	return before || after
}

func change(d *diff, kind string) Change {
	b, a := d.Before, d.After
	now := a
	if now == nil {
		now = b
	}
	c := Change{Path: d.Path, Kind: kind, Type: now.typeName(), Mode: now.octal()}
	if now.isFile() {
		c.Size = now.Size
	}
	if a != nil && a.isLink() {
		c.Target = a.Target
	}
	if b != nil && a != nil {
		if b.isFile() && kind != KindMode {
			c.SizeBefore = b.Size
		}
		if b.perm() != a.perm() || kind == KindType {
			c.ModeBefore = b.octal()
		}
	}
	return c
}

// pairRenames turns a deleted file and a created one with the same hash
// into one renamed change, pairing each file once, in path order. changes
// is sorted by path and describes ds.
func pairRenames(changes []Change, ds []diff) []Change {
	gone := map[digest][]string{}
	for _, d := range ds {
		if d.After == nil && d.Before != nil && d.Before.isFile() && !d.Before.Hash.isZero() {
			gone[d.Before.Hash] = append(gone[d.Before.Hash], d.Path)
		}
	}
	if len(gone) == 0 {
		return changes
	}
	from := map[string]string{} // new path -> old path
	taken := map[string]bool{}
	for _, d := range ds {
		if d.Before != nil || d.After == nil || !d.After.isFile() {
			continue
		}
		if olds := gone[d.After.Hash]; len(olds) > 0 {
			from[d.Path], gone[d.After.Hash] = olds[0], olds[1:]
			taken[olds[0]] = true
		}
	}
	return renamed(changes, from, taken, ds)
}

func renamed(changes []Change, from map[string]string, taken map[string]bool, ds []diff) []Change {
	modes := map[string]string{}
	for _, d := range ds {
		if taken[d.Path] {
			modes[d.Path] = d.Before.octal()
		}
	}
	out := changes[:0]
	for _, c := range changes {
		if taken[c.Path] {
			continue
		}
		if old, ok := from[c.Path]; ok {
			c.Kind, c.From = KindRenamed, old
			if modes[old] != c.Mode {
				c.ModeBefore = modes[old]
			}
		}
		out = append(out, c)
	}
	return out
}
