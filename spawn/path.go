package spawn

import (
	"path"
	"strings"
)

// systemPath lists the directories every child's PATH ends with, in this
// order, unless they already appear earlier.
var systemPath = [...]string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// SystemPath returns a fresh copy of the directories Build appends to PATH
// when they are missing.
func SystemPath() []string { return append([]string(nil), systemPath[:]...) }

// cleanPath rewrites a PATH value: entries are cleaned (path.Clean, so the
// result is the same on every host OS: children may run on a remote Linux
// box), duplicates after the first are removed, and so are the directories in
// remove. Empty and relative entries are dropped and counted in unsafe:
// they make the working directory part of the search path (see os/exec's
// ErrDot). The missing systemPath directories are appended.
func cleanPath(value string, remove map[string]bool) (out string, unsafe int) {
	seen := make(map[string]bool)
	var dirs []string
	if value != "" {
		for _, d := range strings.Split(value, ":") {
			if !strings.HasPrefix(d, "/") {
				unsafe++
				continue
			}
			d = path.Clean(d)
			if remove[d] || seen[d] {
				continue
			}
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, d := range systemPath {
		if !seen[d] {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":"), unsafe
}
