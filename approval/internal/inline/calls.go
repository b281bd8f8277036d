package inline

import "strings"

// span is a half-open range of token indices.
type span struct{ lo, hi int }

// args splits the call whose "(" is at open into its arguments, at the
// commas of depth zero. It returns nil when open is not a "(".
func (j *judge) args(open int) []span {
	if !j.is(open, "(") {
		return nil
	}
	end := j.match[open]
	var out []span
	lo := open + 1
	for k := lo; k < end; k++ {
		if m := j.match[k]; m > k {
			k = m
			continue
		}
		if j.is(k, ",") {
			out = append(out, span{lo, k})
			lo = k + 1
		}
	}
	if lo < end {
		out = append(out, span{lo, end})
	}
	return out
}

// keyword returns the name of a keyword argument (name=value), or "".
func (j *judge) keyword(a span) string {
	if a.hi-a.lo >= 2 && j.kind(a.lo) == tIdent && j.is(a.lo+1, "=") {
		return j.toks[a.lo].text
	}
	return ""
}

// splat reports an argument spread from a sequence or mapping, whose
// contents the judge cannot see.
func (j *judge) splat(a span) bool {
	return j.is(a.lo, "*") || j.is(a.lo, "**") || j.is(a.lo, "...")
}

// hasKeyword reports whether the call at open passes any of names as a
// keyword argument.
func (j *judge) hasKeyword(open int, names ...string) bool {
	for _, a := range j.args(open) {
		k := j.keyword(a)
		for _, n := range names {
			if k != "" && k == n {
				return true
			}
		}
	}
	return false
}

// plainString returns the text of a span that is one string literal with
// no code in it.
func (j *judge) plainString(a span) (string, bool) {
	if a.hi-a.lo != 1 || j.toks[a.lo].kind != tStr || j.toks[a.lo].built {
		return "", false
	}
	return j.toks[a.lo].text, true
}

// readMode reports whether a span is a literal file mode that only reads.
func (j *judge) readMode(a span) bool {
	s, ok := j.plainString(a)
	return ok && s != "" && strings.Trim(s, "rbtU") == ""
}

// writeMode reports whether a literal looks like a mode that writes
// ('w', 'a+', 'x', 'w:gz').
func writeMode(s string) bool {
	return len(s) >= 1 && len(s) <= 6 && strings.Trim(s, "rwxabtU+:|gz2") == "" &&
		strings.ContainsAny(s, "wax+")
}

const writesFile = "opens a file for writing"

// pyOpen judges a call of open. The builtin and module-level opens take
// the mode second; a pathlib.Path's open takes it first. The mode must be
// a literal that only reads; arguments the judge cannot see (*args,
// **kw, opener=) are refused.
func (j *judge) pyOpen(i int) string {
	if !j.is(i+1, "(") {
		return writesFile // open passed along (f = open; open.__call__) hides its mode
	}
	recv := j.receiver(i)
	if recv == "os" {
		return writesFile
	}
	modeAt := 2
	if j.is(i-1, ".") && !openModules[recv] {
		modeAt = 1
	}
	n := 0
	for _, a := range j.args(i + 1) {
		if j.splat(a) {
			return writesFile
		}
		if k := j.keyword(a); k != "" {
			if k == "mode" && !j.readMode(span{a.lo + 2, a.hi}) || k != "mode" && !openKeywords[k] {
				return writesFile
			}
			continue
		}
		n++
		if n == modeAt && !j.readMode(a) || n > modeAt+4 {
			return writesFile
		}
	}
	return ""
}

// fileCall judges other calls that open files by a mode (ZipFile,
// h5py.File, gzip's and tarfile's open are caught here or by pyOpen): a
// literal write mode or a mode= that does not plainly read.
func (j *judge) fileCall(i int) string {
	lower := j.toks[i].lower
	if !j.is(i+1, "(") || !strings.Contains(lower, "file") && !strings.Contains(lower, "open") {
		return ""
	}
	for _, a := range j.args(i + 1) {
		if j.keyword(a) == "mode" && !j.readMode(span{a.lo + 2, a.hi}) {
			return writesFile
		}
		if s, ok := j.plainString(a); ok && writeMode(s) {
			return writesFile
		}
	}
	return ""
}
