package workspace

import (
	"bytes"
	"path"
	"strings"
)

// DefaultProtected are the paths [Comparison.Apply] never writes: git's
// own data, environment files (they hold secrets) and runbox's
// configuration. Patterns are gitignore-style (see [Options.Exclude]).
var DefaultProtected = []string{".git/", ".env*", ".runbox/", ".runbox.yaml", "runbox.yaml"}

// pattern is one gitignore line, relative to the directory of the file
// it came from. It is matched the way git matches it (see wildmatch.go):
// no translation to another syntax, so nothing is lost on the way and no
// line is dropped — a line git cannot use (an unclosed bracket) matches
// nothing, as in git.
type pattern struct {
	base     string // directory of the file it came from, "" for the root
	glob     string // the pattern, without '!', the trailing '/' and a leading '/'
	negate   bool   // '!': a match re-includes
	dirOnly  bool   // a trailing '/': directories only
	basename bool   // no '/' inside: matched against the last name, at any depth
}

// matcher holds patterns in file order; the last match decides, as in git.
type matcher struct{ pats []pattern }

// add parses the lines of a .gitignore found in directory base.
func (m *matcher) add(base string, data []byte) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark, as git skips it
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m.addLine(base, trimTrailingSpaces(line))
	}
}

// trimTrailingSpaces drops the spaces that end line unless a backslash
// escapes them (`a\ ` keeps its last space: the backslash stays, and
// matching reads it as an escape). Tabs are kept, as git keeps them.
func trimTrailingSpaces(line string) string {
	cut := -1
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			if cut < 0 {
				cut = i
			}
			continue
		case '\\':
			if i++; i == len(line) {
				return line
			}
		}
		cut = -1
	}
	if cut >= 0 {
		return line[:cut]
	}
	return line
}

func (m *matcher) addLine(base, line string) {
	p := pattern{base: base}
	if strings.HasPrefix(line, "!") {
		p.negate, line = true, line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, line[:len(line)-1]
	}
	if line == "" {
		return
	}
	p.basename = !strings.Contains(line, "/")
	p.glob = strings.TrimPrefix(line, "/")
	m.pats = append(m.pats, p)
}

// matches reports whether p matches name (slash-separated, relative to
// the root).
func (p pattern) matches(name string, dir bool) bool {
	if p.dirOnly && !dir {
		return false
	}
	if p.base != "" {
		rest, ok := strings.CutPrefix(name, p.base+"/")
		if !ok {
			return false
		}
		name = rest
	}
	if p.basename {
		return wildmatch(p.glob, path.Base(name), false)
	}
	return wildmatch(p.glob, name, true)
}

// match reports whether name (slash-separated, relative) is matched; the
// last matching pattern decides.
func (m *matcher) match(name string, dir bool) bool {
	for i := len(m.pats) - 1; i >= 0; i-- {
		if m.pats[i].matches(name, dir) {
			return !m.pats[i].negate
		}
	}
	return false
}

// matchPath is match for name or any directory above it, which is what
// a protected or excluded directory means for the files inside it.
func (m *matcher) matchPath(name string, dir bool) bool {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if m.match(d, true) {
			return true
		}
	}
	return m.match(name, dir)
}

// newMatcher is a matcher of lines that all apply from the root.
func newMatcher(lines []string) *matcher {
	m := &matcher{}
	for _, l := range lines {
		m.addLine("", l)
	}
	return m
}
