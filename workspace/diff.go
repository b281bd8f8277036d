package workspace

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Context is the number of unchanged lines shown around a change.
const Context = 3

// Diff renders the change as a git-style unified diff against the local
// file (a/ is the local side, b/ the sandbox's), which `patch -p1` and
// `git apply` accept. A binary file gets git's one-line note instead of
// hunks; a conflict is shown the same way, local against sandbox.
func (c *Change) Diff() string {
	o, t := c.Ours, c.Theirs
	if o != nil && t != nil && o.Type != t.Type {
		// A type change is a deletion and an addition, as git shows it.
		return section(c.Path, o, nil, c.oursContent(), nil) + section(c.Path, nil, t, nil, c.theirsContent())
	}
	return section(c.Path, o, t, c.oursContent(), c.theirsContent())
}

// Binary reports whether either side is a file that is not text.
func (c *Change) Binary() bool {
	return c.Ours != nil && c.Ours.Type == TypeFile && isBinary(c.ours) ||
		c.Theirs != nil && c.Theirs.Type == TypeFile && isBinary(c.theirs)
}

func (c *Change) oursContent() []byte {
	if c.Ours != nil && c.Ours.Type == TypeSymlink {
		return []byte(c.Ours.Link)
	}
	return c.ours
}

func (c *Change) theirsContent() []byte {
	if c.Theirs != nil && c.Theirs.Type == TypeSymlink {
		return []byte(c.Theirs.Link)
	}
	return c.theirs
}

// gitMode is the mode git writes for an entry.
func gitMode(e *Entry) string {
	switch {
	case e.Type == TypeSymlink:
		return "120000"
	case e.Mode&0o100 != 0:
		return "100755"
	}
	return "100644"
}

// section is the diff of one path from a (content ac) to b (content bc).
func section(p string, a, b *Entry, ac, bc []byte) string {
	var w strings.Builder
	an, bn := quoteName("a/"+p), quoteName("b/"+p)
	fmt.Fprintf(&w, "diff --git %s %s\n", an, bn)
	switch {
	case a == nil:
		fmt.Fprintf(&w, "new file mode %s\n", gitMode(b))
	case b == nil:
		fmt.Fprintf(&w, "deleted file mode %s\n", gitMode(a))
	case gitMode(a) != gitMode(b):
		fmt.Fprintf(&w, "old mode %s\nnew mode %s\n", gitMode(a), gitMode(b))
	}
	if a != nil && b != nil && bytes.Equal(ac, bc) {
		return w.String() // a mode change alone
	}
	from, to := an, bn
	if a == nil {
		from = "/dev/null"
	}
	if b == nil {
		to = "/dev/null"
	}
	if a != nil && a.Type == TypeFile && isBinary(ac) || b != nil && b.Type == TypeFile && isBinary(bc) {
		fmt.Fprintf(&w, "Binary files %s and %s differ\n", from, to)
		return w.String()
	}
	fmt.Fprintf(&w, "--- %s%s\n+++ %s%s\n", from, tabIfSpace(from), to, tabIfSpace(to))
	w.WriteString(hunks(string(ac), string(bc)))
	return w.String()
}

// tabIfSpace ends a header name that holds a space with a tab, which is
// how GNU patch knows where the name ends.
func tabIfSpace(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

// quoteName writes a name as git does: as is when it is plain, else in
// double quotes with C escapes (octal for bytes that are not printable
// ASCII), which GNU patch and git apply both read.
func quoteName(name string) string {
	plain := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// isBinary says whether content is not text: it holds a NUL byte or is
// not UTF-8.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

// line is one line of a line diff: ' ' kept, '-' removed, '+' added; text
// ends with its newline, except a last line that has none.
type line struct {
	op   byte
	text string
}

// lineDiff is the line-mode diff of a and b.
func lineDiff(a, b string) []line {
	dmp := diffmatchpatch.New()
	ra, rb, lines := dmp.DiffLinesToRunes(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), lines)
	var out []line
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for t := d.Text; t != ""; {
			i := strings.IndexByte(t, '\n') + 1
			if i == 0 {
				i = len(t)
			}
			out = append(out, line{op, t[:i]})
			t = t[i:]
		}
	}
	return out
}

// hunks renders the diff of a and b as unified hunks with [Context]
// lines of context.
func hunks(a, b string) string {
	ls := lineDiff(a, b)
	// oldAt[i], newAt[i]: lines of a and b before ls[i].
	oldAt, newAt := make([]int, len(ls)+1), make([]int, len(ls)+1)
	for i, l := range ls {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if l.op != '+' {
			oldAt[i+1]++
		}
		if l.op != '-' {
			newAt[i+1]++
		}
	}
	var w strings.Builder
	for i := 0; i < len(ls); {
		if ls[i].op == ' ' {
			i++
			continue
		}
		start := max(0, i-Context)
		j := i
		for {
			for j < len(ls) && ls[j].op != ' ' {
				j++
			}
			k := j
			for k < len(ls) && ls[k].op == ' ' {
				k++
			}
			if k < len(ls) && k-j <= 2*Context {
				j = k
				continue
			}
			break
		}
		end := min(j+Context, len(ls))
		oldN, newN := oldAt[end]-oldAt[start], newAt[end]-newAt[start]
		oldS, newS := oldAt[start], newAt[start]
		if oldN > 0 {
			oldS++
		}
		if newN > 0 {
			newS++
		}
		fmt.Fprintf(&w, "@@ -%s +%s @@\n", hunkRange(oldS, oldN), hunkRange(newS, newN))
		for _, l := range ls[start:end] {
			w.WriteByte(l.op)
			w.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				w.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return w.String()
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
