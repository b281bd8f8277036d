package workspace

import "strings"

// wildmatch is git's glob matching of gitignore patterns, byte for byte
// (git's wildmatch.c, without case folding): `*` and `?` stay within a
// name when pathname is set; `**` between slashes, or at either end,
// crosses directories; `[...]` is a set of bytes, negated by `!` or `^`,
// with ranges, backslash escapes and `[:class:]` names, and it never
// matches `/` when pathname is set; a backslash makes the next byte
// literal. A pattern git gives up on (an unclosed `[`, an unknown class)
// matches nothing. TestWildmatch_AgainstGit holds it to git itself.
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

// wmResult is the outcome of one dowild call; the two aborts tell the
// enclosing `*` loops to stop trying further positions.
type wmResult int

const (
	wmMatch wmResult = iota
	wmNoMatch
	wmAbortAll        // no position of any enclosing star can match
	wmAbortToStarStar // only an enclosing `**` may still match
)

func dowild(p, text string, pathname bool) wmResult {
	ti := 0
	for pi := 0; pi < len(p); pi, ti = pi+1, ti+1 {
		pc := p[pi]
		if ti == len(text) && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			// A trailing backslash is compared with the end of the text
			// (which is not there: no match).
			if pi++; pi == len(p) || text[ti] != p[pi] {
				return wmNoMatch
			}
		case '?':
			if pathname && text[ti] == '/' {
				return wmNoMatch
			}
		case '*':
			r, npi, nti, done := star(p, text, pi, ti, pathname)
			if done {
				return r
			}
			pi, ti = npi, nti
		case '[':
			r, npi := bracket(p, pi, text[ti], pathname)
			if r != wmMatch {
				return r
			}
			pi = npi
		default:
			if text[ti] != pc {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// star matches the `*` or `**` at p[pi] against text[ti:]. It either
// decides (done) or, for a single `*` followed by a slash, moves both on
// to that slash, which the caller's loop then consumes.
func star(p, text string, pi, ti int, pathname bool) (r wmResult, npi, nti int, done bool) {
	matchSlash := !pathname
	if pi++; pi < len(p) && p[pi] == '*' {
		prev := pi - 2
		for pi < len(p) && p[pi] == '*' {
			pi++
		}
		// Without pathname, '*' is '**' already.
		if pathname {
			matchSlash = false
		}
		if pathname && (prev < 0 || p[prev] == '/') && (pi == len(p) || p[pi] == '/' || strings.HasPrefix(p[pi:], `\/`)) {
			// "**/" also matches no directory at all.
			if pi < len(p) && p[pi] == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
				return wmMatch, 0, 0, true
			}
			matchSlash = true
		}
	}
	if pi == len(p) {
		if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
			return wmNoMatch, 0, 0, true
		}
		return wmMatch, 0, 0, true
	}
	if !matchSlash && p[pi] == '/' {
		slash := strings.IndexByte(text[ti:], '/')
		if slash < 0 {
			return wmNoMatch, 0, 0, true
		}
		return 0, pi, ti + slash, false
	}
	for ti < len(text) {
		// A literal after the star: skip to where it occurs (not past a
		// slash the star cannot cross), as git does.
		if c := p[pi]; !strings.ContainsRune(`*?[\`, rune(c)) {
			for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != c {
				ti++
			}
			if ti == len(text) || text[ti] != c {
				return wmNoMatch, 0, 0, true
			}
		}
		m := dowild(p[pi:], text[ti:], pathname)
		if m != wmNoMatch {
			if !matchSlash || m != wmAbortToStarStar {
				return m, 0, 0, true
			}
		} else if !matchSlash && text[ti] == '/' {
			return wmAbortToStarStar, 0, 0, true
		}
		ti++
	}
	return wmAbortAll, 0, 0, true
}

// bracket matches the set that opens at p[pi] against c. It returns
// wmMatch and the index of the closing `]`, wmNoMatch, or wmAbortAll for
// a set git cannot read.
func bracket(p string, pi int, c byte, pathname bool) (wmResult, int) {
	pi++
	negated := pi < len(p) && (p[pi] == '!' || p[pi] == '^')
	if negated {
		pi++
	}
	var prev byte
	matched := false
	for first := true; first || pi < len(p) && p[pi] != ']'; first = false {
		if pi >= len(p) {
			return wmAbortAll, 0
		}
		pc := p[pi]
		switch {
		case pc == '\\':
			if pi++; pi == len(p) {
				return wmAbortAll, 0
			}
			pc = p[pi]
			matched = matched || c == pc
		case pc == '-' && prev != 0 && pi+1 < len(p) && p[pi+1] != ']':
			pi++
			hi := p[pi]
			if hi == '\\' {
				if pi++; pi == len(p) {
					return wmAbortAll, 0
				}
				hi = p[pi]
			}
			matched = matched || prev <= c && c <= hi
			pc = 0 // a range is not the start of another
		case pc == '[' && pi+1 < len(p) && p[pi+1] == ':':
			end := strings.IndexByte(p[pi+2:], ']')
			if end < 0 {
				return wmAbortAll, 0
			}
			name := p[pi+2 : pi+2+end]
			if !strings.HasSuffix(name, ":") {
				// No ":]": the '[' is an ordinary member.
				matched = matched || c == '['
				break
			}
			in, ok := inClass(strings.TrimSuffix(name, ":"), c)
			if !ok {
				return wmAbortAll, 0
			}
			matched = matched || in
			pi += 2 + end
			pc = 0
		default:
			matched = matched || c == pc
		}
		prev = pc
		pi++
	}
	if pi >= len(p) {
		return wmAbortAll, 0
	}
	if matched == negated || pathname && c == '/' {
		return wmNoMatch, 0
	}
	return wmMatch, pi
}

// inClass reports whether c is in the named character class (git's
// ASCII-only classes); ok is false for a name git does not know.
func inClass(name string, c byte) (in, ok bool) {
	upper, lower, digit := 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9'
	graph := 0x21 <= c && c <= 0x7e
	switch name {
	case "alnum":
		return upper || lower || digit, true
	case "alpha":
		return upper || lower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return graph, true
	case "lower":
		return lower, true
	case "print":
		return graph || c == ' ', true
	case "punct":
		return graph && !upper && !lower && !digit, true
	case "space":
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F', true
	}
	return false, false
}
