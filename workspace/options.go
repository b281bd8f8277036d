package workspace

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
)

// DefaultRemote is the sandbox directory a workspace goes to when
// [Options.Remote] is empty.
const DefaultRemote = "/workspace"

// DefaultMaxBytes bounds a tree (the sum of its files' sizes) when
// [Options.MaxBytes] is zero.
const DefaultMaxBytes = 256 << 20

// Options describe a task's workspace.
type Options struct {
	// Task names the work; its manifest is keyed by it. Required.
	Task string
	// Dir is the local directory. Required.
	Dir string
	// Remote is the absolute directory in the sandbox. Empty means
	// [DefaultRemote]. "/" is refused: a first push replaces the
	// directory's contents.
	Remote string
	// StateDir is runbox's state directory; manifests live in its sync/
	// subdirectory, which is checked and created like the rest of it
	// (the rules of package statedir). Required.
	StateDir string
	// Exclude adds gitignore-style patterns of paths never pushed nor
	// brought back. Nil adds none.
	Exclude []string
	// NoGitignore stops the .gitignore files from excluding paths. False
	// honours them (the root's and every subdirectory's).
	NoGitignore bool
	// IncludeGit sends .git/ too. False leaves it out.
	IncludeGit bool
	// Protected are gitignore-style patterns that Apply never writes. Nil
	// means [DefaultProtected]; an empty non-nil slice protects nothing.
	Protected []string
	// MaxBytes bounds both trees; a bigger one is refused with
	// [ErrTooLarge]. Zero means [DefaultMaxBytes]; negative means no limit.
	MaxBytes int64
}

// fill checks o and fills its defaults.
func (o *Options) fill() error {
	if o.Task == "" {
		return errors.New("workspace: no task")
	}
	if o.Dir == "" {
		return errors.New("workspace: no local directory")
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	o.Dir = abs
	if o.Remote == "" {
		o.Remote = DefaultRemote
	}
	if !path.IsAbs(o.Remote) || path.Clean(o.Remote) == "/" {
		return fmt.Errorf("workspace: remote directory %q: want an absolute path other than /", o.Remote)
	}
	o.Remote = path.Clean(o.Remote)
	if o.Protected == nil {
		o.Protected = DefaultProtected
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return nil
}

// options are the manifest's recorded options.
func (m *Manifest) options(stateDir string) Options {
	return Options{
		Task: m.Task, Dir: m.Local, Remote: m.Remote, StateDir: stateDir,
		Exclude: m.Exclude, NoGitignore: m.NoGitignore, IncludeGit: m.IncludeGit,
		Protected: m.Protected, MaxBytes: m.MaxBytes,
	}
}

// newManifest records o for a manifest.
func newManifest(o *Options) *Manifest {
	p := o.Protected
	if p == nil {
		p = []string{}
	}
	return &Manifest{
		Task: o.Task, Local: o.Dir, Remote: o.Remote,
		Exclude: o.Exclude, NoGitignore: o.NoGitignore, IncludeGit: o.IncludeGit,
		Protected: p, MaxBytes: o.MaxBytes,
	}
}

// scanLocal scans o.Dir with o's filter, reusing the hashes of prev (a
// manifest; nil means none) where they can be trusted.
func scanLocal(o *Options, prev *Manifest) (Tree, *matcher, []string, error) {
	s := &scanner{root: o.Dir, ignore: newFilter(o), git: !o.NoGitignore, maxBytes: o.MaxBytes}
	if prev != nil {
		s.prev, s.prevScan = prev.tree(), prev.Scanned
	}
	t, err := s.scan()
	return t, s.ignore, s.skipped, err
}
