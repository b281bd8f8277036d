package undo

import (
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
)

// defaultExclude is what no journal walks or records; see [DefaultExcludes].
var defaultExclude = []string{".git/objects", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".venv", ".gradle", ".next"}

// DefaultExcludes returns what every journal leaves out, before
// [Options].Exclude adds to it: caches and dependency trees that
// commands rebuild, and git's object database (its refs, index and config
// are kept, so `git checkout` and `git commit` can be undone; the objects
// they point to are only ever added, never changed). It returns a new
// slice each time.
//
// Paths are slash-separated and relative to the root; an entry matches
// that path and everything under it; an entry without a slash matches a
// file or directory of that name at any depth.
func DefaultExcludes() []string { return slices.Clone(defaultExclude) }

// Options tunes a [Journal]. The zero value is ready to use.
type Options struct {
	// Exclude is added to [DefaultExcludes]; the defaults cannot be
	// removed. A leading slash anchors a name at the root ("/build");
	// a trailing slash is ignored.
	Exclude []string
	// MaxBytes bounds the store: the mirror of the workspace's current
	// content plus the earlier content kept for undo. After a checkpoint
	// the oldest steps are dropped until the store fits; when the mirror
	// alone would not fit, new content is not kept. 0 means 1 GiB.
	MaxBytes int64
	// MaxFileBytes is the largest file whose content is kept; a larger one
	// is tracked by its metadata only and an undo that needs its earlier
	// content refuses. 0 means 256 MiB.
	MaxFileBytes int64
	// MaxListed bounds the changes listed in a [Record] or [Undone]; the
	// rest are only counted. 0 means 200.
	MaxListed int
	// Logger receives what the journal drops or skips (steps dropped for
	// the bound, files it cannot read). nil means nothing is logged.
	Logger *slog.Logger
}

const (
	defaultMaxBytes     = 1 << 30
	defaultMaxFileBytes = 256 << 20
	defaultMaxListed    = 200
)

// withDefaults returns a copy of o with its zero fields filled in.
func (o Options) withDefaults() (Options, error) {
	if o.MaxBytes < 0 || o.MaxFileBytes < 0 || o.MaxListed < 0 {
		return o, fmt.Errorf("undo: negative bound in options (MaxBytes %d, MaxFileBytes %d, MaxListed %d)", o.MaxBytes, o.MaxFileBytes, o.MaxListed)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = defaultMaxFileBytes
	}
	if o.MaxListed == 0 {
		o.MaxListed = defaultMaxListed
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Exclude = slices.Clone(o.Exclude)
	return o, nil
}

// excluder decides what the walk leaves out.
type excluder struct {
	names map[string]bool // a name at any depth
	paths map[string]bool // one path (and so everything under it)
	list  []string        // as given, for [Record].Excluded
}

func newExcluder(patterns []string) *excluder {
	x := &excluder{names: map[string]bool{}, paths: map[string]bool{}}
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
		if p == "" || p == "/" || p == "." {
			continue
		}
		if !strings.Contains(p, "/") {
			x.names[p] = true
		} else {
			x.paths[path.Clean(strings.TrimPrefix(p, "/"))] = true
		}
		x.list = append(x.list, p)
	}
	return x
}

// skip says whether the entry rel (whose last element is name) is left
// out. The walk never descends into what it skips, so matching the path
// itself also leaves out everything under it.
func (x *excluder) skip(rel, name string) bool {
	return x.names[name] || x.paths[rel]
}

// covers says whether rel or a directory above it is left out.
func (x *excluder) covers(rel string) bool {
	for {
		i := strings.LastIndexByte(rel, '/')
		if x.skip(rel, rel[i+1:]) {
			return true
		}
		if i < 0 {
			return false
		}
		rel = rel[:i]
	}
}
