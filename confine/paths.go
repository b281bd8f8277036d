package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// resolveAll makes every path absolute and free of symbolic links; for a
// path that does not exist, the deepest existing ancestor is resolved and
// the rest appended.
func resolveAll(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		r, err := resolve(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func resolve(p string) (string, error) {
	p = filepath.Clean(p)
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("confine: resolving %s: %w", p, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest), nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether path is root or lies below it.
func within(path, root string) bool {
	if path == root || root == "/" {
		return true
	}
	return strings.HasPrefix(path, root+"/")
}

// deepest returns the length of the longest of roots that holds path, or
// -1 when none does: between a denied and a writable root that both hold
// a path, the more specific one decides.
func deepest(path string, roots []string) int {
	n := -1
	for _, r := range roots {
		if within(path, r) && len(r) > n {
			n = len(r)
		}
	}
	return n
}
