package workspace

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ApplyOptions select what [Comparison.Apply] writes.
type ApplyOptions struct {
	// Paths selects changes by path or by a directory above them. Nil
	// means every change.
	Paths []string
	// Theirs applies conflicts too, taking the sandbox's side. False
	// refuses the whole apply when a selected change is a conflict.
	Theirs bool
}

// ApplyReport says what an apply did.
type ApplyReport struct {
	// Written are the files and links written, Deleted the ones removed.
	Written []string `json:"written"`
	Deleted []string `json:"deleted"`
	// Skipped are selected changes left alone, with the reason:
	// "PATH (protected)", or "PATH (refused: WHY)" for a path git or a
	// shell here would act on ([ErrRefused]).
	Skipped []string `json:"skipped,omitempty"`
}

// Apply writes the selected changes into the local directory and records
// them in the manifest (so they are not changes any more). Every change is
// checked before the first write: a conflict (unless o.Theirs), a name
// that would leave the directory, a link that leads out or into a refused
// path once every link on its way is followed (those already here and
// those the changes make), a change that makes a link already here lead
// out, a parent that is a symbolic link or a file (here or in the
// changes), or a local file that changed since the comparison refuses
// the whole apply. Protected paths and paths git or a shell would act on
// ([Change.Refused]) are skipped and reported. Each file is written to a
// temporary name and renamed into place, through an [os.Root] of the
// directory, so nothing is written outside it whatever links the tree
// holds; its mode keeps the permission bits without set-id, sticky or
// world-write.
func (c *Comparison) Apply(ctx context.Context, o ApplyOptions) (*ApplyReport, error) {
	rep := &ApplyReport{}
	var todo []*Change
	for _, ch := range c.Changes {
		if !selected(ch.Path, o.Paths) {
			continue
		}
		if ch.Protected {
			rep.Skipped = append(rep.Skipped, ch.Path+" (protected)")
			continue
		}
		// Compare marked these; the names are judged again here so that
		// no path that skipped the comparison's marks is written.
		why := hostRefusal(ch.Path)
		if errors.Is(ch.refusal, ErrRefused) {
			why = ch.Refused
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, ch.Path+" (refused: "+why+")")
			continue
		}
		todo = append(todo, ch)
	}
	if len(o.Paths) > 0 && len(todo) == 0 && len(rep.Skipped) == 0 {
		return nil, fmt.Errorf("workspace: no change under %s", strings.Join(o.Paths, ", "))
	}
	unlock, err := lock(c.opts.StateDir, c.Manifest.Task)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if now, err := Load(c.opts.StateDir, c.Manifest.Task); err != nil {
		return nil, err
	} else if now.Scanned != c.Manifest.Scanned {
		return nil, fmt.Errorf("workspace: task %s was pushed again since the comparison; compare again", c.Manifest.Task)
	}
	root, err := os.OpenRoot(c.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	var errs []error
	for _, ch := range todo {
		if err := c.check(root, ch, o.Theirs); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.checkLinks(root, todo)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	base := c.Manifest.tree()
	for _, ch := range todo {
		if err := ctx.Err(); err != nil {
			return rep, c.commit(base, err)
		}
		if ch.Theirs == nil {
			if err := root.Remove(ch.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return rep, c.commit(base, fmt.Errorf("workspace: delete %s: %w", ch.Path, err))
			}
			delete(base, ch.Path)
			rep.Deleted = append(rep.Deleted, ch.Path)
			continue
		}
		if err := write(root, ch); err != nil {
			return rep, c.commit(base, fmt.Errorf("workspace: write %s: %w", ch.Path, err))
		}
		e := *ch.Theirs
		e.Mode = safeMode(e.Mode)
		if fi, err := root.Lstat(ch.Path); err == nil && e.Type == TypeFile {
			e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
		}
		base[ch.Path] = &e
		rep.Written = append(rep.Written, ch.Path)
	}
	return rep, c.commit(base, nil)
}

// commit records what was applied in the manifest; err is the apply's own
// failure, returned with any failure to save.
func (c *Comparison) commit(base Tree, err error) error {
	if c.BaseLost != "" {
		return err // a base of another tree: the next push makes a new one
	}
	c.Manifest.setTree(base)
	return errors.Join(err, c.Manifest.save(c.opts.StateDir))
}

// check refuses a change that must not be applied.
func (c *Comparison) check(root *os.Root, ch *Change, theirs bool) error {
	if ch.Kind == Conflict && !theirs {
		return &PathError{Path: ch.Path, Err: ErrConflict}
	}
	if err := cleanRel(ch.Path); err != nil {
		return err
	}
	if t := ch.Theirs; t != nil && t.Type == TypeSymlink {
		if err := checkLink(ch.Path, t.Link); err != nil {
			return err
		}
	}
	// Every parent that exists must be a real directory: writing through
	// a link would change another path than the one shown.
	for d := path.Dir(ch.Path); d != "."; d = path.Dir(d) {
		fi, err := root.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("workspace: %s: %w", d, err)
		}
		if !fi.IsDir() {
			return &PathError{Path: ch.Path, Err: fmt.Errorf("%w (%s is not a directory)", ErrUnsafePath, d)}
		}
	}
	// The local side must still be what was compared.
	fi, err := root.Lstat(ch.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ch.Ours != nil && !theirs {
			return &PathError{Path: ch.Path, Err: fmt.Errorf("%w (deleted locally since the comparison)", ErrConflict)}
		}
	case err != nil:
		return fmt.Errorf("workspace: %s: %w", ch.Path, err)
	case fi.IsDir():
		return &PathError{Path: ch.Path, Err: fmt.Errorf("%w (a directory here)", ErrConflict)}
	case !theirs && ch.Ours == nil:
		return &PathError{Path: ch.Path, Err: fmt.Errorf("%w (created locally since the comparison)", ErrConflict)}
	case !theirs && ch.Ours.Type == TypeFile:
		b, err := readIn(root, ch.Path)
		if err != nil {
			return fmt.Errorf("workspace: %s: %w", ch.Path, err)
		}
		if hashBytes(b) != ch.Ours.Hash {
			return &PathError{Path: ch.Path, Err: fmt.Errorf("%w (changed locally since the comparison)", ErrConflict)}
		}
	}
	return nil
}

// write puts the sandbox's side of ch at its path: a temporary name in
// the same directory, then a rename over the target.
func write(root *os.Root, ch *Change) error {
	dir := path.Dir(ch.Path)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := path.Join(dir, ".runbox-sync-"+rand.Text())
	t := ch.Theirs
	if t.Type == TypeSymlink {
		if err := root.Symlink(t.Link, tmp); err != nil {
			return err
		}
	} else {
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(ch.theirs)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = root.Chmod(tmp, safeMode(t.Mode))
		}
		if err != nil {
			root.Remove(tmp)
			return err
		}
	}
	if err := root.Rename(tmp, ch.Path); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// safeMode is the mode a file from the sandbox gets here: its permission
// bits without set-user-ID, set-group-ID and sticky (fs.FileMode.Perm
// drops them) and without write for others, so the sandbox can make
// neither a program that runs with another's rights nor a file anyone
// may change.
func safeMode(m fs.FileMode) fs.FileMode {
	return m.Perm() &^ 0o002
}

// checkLinks refuses, in the directory as it will be once todo is
// applied: a link todo makes that resolves out of the directory or to a
// refused path; a change under a path that todo makes a link or a file
// (it would be written through that link); and a local link, fine
// before, that todo makes lead out.
func (c *Comparison) checkLinks(root *os.Root, todo []*Change) []error {
	over := make(map[string]*Entry, len(todo))
	for _, ch := range todo {
		over[ch.Path] = ch.Theirs
	}
	v, before := newView(root, over), newView(root, nil)
	var errs []error
	for _, ch := range todo {
		for d := path.Dir(ch.Path); d != "."; d = path.Dir(d) {
			if e := over[d]; e != nil {
				errs = append(errs, &PathError{Path: ch.Path, Err: fmt.Errorf("%w (the changes make %s a %s)", ErrUnsafePath, d, e.Type)})
				break
			}
		}
		if t := ch.Theirs; t != nil && t.Type == TypeSymlink {
			why, err := v.linkRefusal(ch.Path, t.Link)
			if err != nil {
				return append(errs, err)
			}
			if why != "" {
				errs = append(errs, linkError(ch.Path, t.Link, why))
			}
		}
	}
	for p := range c.localLinks {
		if _, changed := over[p]; changed {
			continue
		}
		n, err := before.lookup(p)
		if err != nil || n.typ != TypeSymlink {
			continue // gone since the comparison
		}
		why, err := v.linkRefusal(p, n.link)
		if err != nil || why == "" {
			continue
		}
		if was, err := before.linkRefusal(p, n.link); err == nil && was == "" {
			errs = append(errs, linkError(p, n.link, why+" with the changes applied"))
		}
	}
	return errs
}
