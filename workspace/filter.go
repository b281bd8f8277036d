package workspace

import (
	"bufio"
	"bytes"
	"path"
	"regexp"
	"strings"
)

// DefaultProtected are the paths [Comparison.Apply] never writes: git's
// own data, environment files (they hold secrets) and runbox's
// configuration. Patterns are gitignore-style (see [Options.Exclude]).
var DefaultProtected = []string{".git/", ".env*", ".runbox/", ".runbox.yaml", "runbox.yaml"}

// pattern is one gitignore-style line, relative to the directory of the
// file it came from (base, "" for the root).
type pattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// matcher holds patterns in file order; the last match decides, as in git.
type matcher struct{ pats []pattern }

// add parses gitignore lines found in directory base.
func (m *matcher) add(base string, data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m.addLine(base, line)
	}
}

func (m *matcher) addLine(base, line string) {
	p := pattern{}
	if strings.HasPrefix(line, "!") {
		p.negate, line = true, line[1:]
	}
	line = strings.TrimPrefix(line, `\`)
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	var b strings.Builder
	b.WriteString("^")
	if base != "" {
		b.WriteString(regexp.QuoteMeta(base + "/"))
	}
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	b.WriteString(globRegexp(line))
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return // a pattern git would not understand either
	}
	p.re = re
	m.pats = append(m.pats, p)
}

// globRegexp translates a gitignore glob: * and ? stay within a name,
// ** crosses directories, [...] is a class.
func globRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString("/.*")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j + 1
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(string(g[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// match reports whether name (slash-separated, relative) is matched; the
// last matching pattern decides.
func (m *matcher) match(name string, dir bool) bool {
	hit := false
	for _, p := range m.pats {
		if p.dirOnly && !dir {
			continue
		}
		if p.re.MatchString(name) {
			hit = !p.negate
		}
	}
	return hit
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
