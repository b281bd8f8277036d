package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// Tree is a scanned tree: its entries by path.
type Tree map[string]*Entry

// scanner walks the local directory.
type scanner struct {
	root     string
	fs       *os.Root // root, opened: files are read through no link that leads out of it
	ignore   *matcher // excluded and .gitignore'd paths, grown as the walk goes
	git      bool     // read .gitignore files
	maxBytes int64
	prev     Tree  // the last manifest: hashes reused on equal size and mtime
	prevScan int64 // when prev's scan began: later mtimes are not trusted
	// skipped lists what was left out for a reason the user should know
	// (links that lead out, special files).
	skipped []string
}

// newFilter builds the exclusion matcher the options describe (without
// the .gitignore files, which the walk adds as it finds them).
func newFilter(o *Options) *matcher {
	lines := []string{".git/"}
	if o.IncludeGit {
		lines = nil
	}
	return newMatcher(append(lines, o.Exclude...))
}

// scan walks s.root and returns its entries.
func (s *scanner) scan() (Tree, error) {
	// A command (or a job) may swap a link in for a directory while the
	// walk runs: every file is read through the tree opened once, so a
	// link that leads out of it (to ~/.ssh) reads nothing.
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, fmt.Errorf("workspace: scan %s: %w", s.root, err)
	}
	defer r.Close()
	s.fs = r
	t := Tree{}
	var total int64
	err = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return s.readIgnore("")
		}
		if rel == MarkerName {
			// The sandbox's own marker (see [MarkerName]): a local file of
			// that name would pass for it.
			s.skipped = append(s.skipped, rel+" (the name of runbox's sync marker)")
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if s.ignore.match(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := &Entry{Path: rel, Mode: fi.Mode().Perm(), MTime: fi.ModTime().UnixNano()}
		switch {
		case fi.IsDir():
			e.Type = TypeDir
			if err := s.readIgnore(rel); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if checkLink(rel, link) != nil {
				s.skipped = append(s.skipped, rel+" (symbolic link leads out of the tree)")
				return nil
			}
			e.Type, e.Link, e.Hash = TypeSymlink, link, hashBytes([]byte(link))
		case fi.Mode().IsRegular():
			e.Type, e.Size = TypeFile, fi.Size()
			if total += e.Size; s.maxBytes > 0 && total > s.maxBytes {
				return fmt.Errorf("%w: %s holds more than %d bytes", ErrTooLarge, s.root, s.maxBytes)
			}
			if old := s.prev[rel]; old != nil && old.Type == TypeFile && old.Size == e.Size && old.MTime == e.MTime && old.Hash != "" && e.MTime < s.prevScan {
				e.Hash = old.Hash
			} else if e.Hash, err = hashIn(s.fs, rel); err != nil {
				return err
			}
		default:
			s.skipped = append(s.skipped, rel+" (not a file, link or directory)")
			return nil
		}
		t[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: scan %s: %w", s.root, err)
	}
	return t, nil
}

// readIgnore adds the .gitignore of directory rel, if any.
func (s *scanner) readIgnore(rel string) error {
	if !s.git {
		return nil
	}
	p := filepath.Join(s.root, filepath.FromSlash(rel), ".gitignore")
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return nil
	}
	if err != nil {
		return err
	}
	data, err := readIn(s.fs, filepath.Join(filepath.FromSlash(rel), ".gitignore"))
	if err != nil {
		return err
	}
	s.ignore.add(rel, data)
	return nil
}

// readIn reads the regular file name of root whole, through no link that
// leads out of root and without waiting on a fifo a command left in its
// place (root.ReadFile would wait for the fifo's writer for good).
func readIn(root *os.Root, name string) ([]byte, error) {
	f, err := regular.OpenIn(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// hashIn hashes the regular file rel of root, read through no link that
// leads out of root.
func hashIn(root *os.Root, rel string) (string, error) {
	f, err := regular.OpenIn(root, filepath.FromSlash(rel))
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// cleanRel checks a slash-separated relative name: not empty, not
// absolute, no "..", no empty or "." element.
func cleanRel(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") && filepath.Separator == '\\' {
		return &PathError{Path: name, Err: ErrUnsafePath}
	}
	if strings.ContainsRune(name, 0) || path.Clean(name) != name {
		return &PathError{Path: name, Err: ErrUnsafePath}
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." || el == "." || el == "" {
			return &PathError{Path: name, Err: ErrUnsafePath}
		}
	}
	return nil
}

// checkLink refuses a symbolic link at name whose target is absolute or
// resolves outside the tree.
func checkLink(name, target string) error {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) {
		return &PathError{Path: name + " -> " + target, Err: ErrUnsafePath}
	}
	joined := path.Clean(path.Join(path.Dir(name), target))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return &PathError{Path: name + " -> " + target, Err: ErrUnsafePath}
	}
	return nil
}
