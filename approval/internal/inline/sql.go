package inline

import "strings"

const opaqueSQL = "runs sql it cannot read"

// sql judges a program that runs SQL (execute, read_sql, query, …). It is
// quiet only when every SQL call is given a plain literal, or a name
// bound once to one, and no string literal in the program holds a word
// that changes data or schema. Checking every literal, not only the
// arguments, keeps SQL assembled in variables in sight.
func (j *judge) sql() string {
	calls := j.sqlCalls()
	if len(calls) == 0 {
		return ""
	}
	if why := j.sqlLiterals(); why != "" {
		return why
	}
	args := map[int]bool{}
	for _, c := range calls {
		a := j.args(c + 1)
		if len(a) > 0 && a[0].hi-a[0].lo == 1 && j.kind(a[0].lo) == tIdent {
			args[a[0].lo] = true
		}
	}
	plain := map[string]bool{} // names found bound to literals, checked once
	for _, c := range calls {
		if !j.sqlArgPlain(c, args, plain) {
			return opaqueSQL
		}
	}
	return ""
}

// sqlCalls lists the names that call SQL.
func (j *judge) sqlCalls() []int {
	var out []int
	for i, t := range j.toks {
		if t.kind == tIdent && sqlCalls[t.lower] && j.is(i+1, "(") {
			out = append(out, i)
		}
	}
	return out
}

// sqlLiterals checks each string literal, and each run of adjacent ones
// joined (Python joins 'DR' 'OP'), for words that change data. A
// backslash could spell such a word by escapes, so it is refused.
func (j *judge) sqlLiterals() string {
	var run []byte
	for i, t := range j.toks {
		if t.kind != tStr {
			run = run[:0]
			continue
		}
		if strings.IndexByte(t.text, '\\') >= 0 {
			return opaqueSQL
		}
		run = append(run, t.text...)
		if w := changingWord(t.text); w != "" {
			return "runs sql that changes data (" + w + ")"
		}
		if j.kind(i+1) == tStr {
			continue
		}
		if w := changingWord(string(run)); w != "" {
			return "runs sql that changes data (" + w + ")"
		}
	}
	return ""
}

// changingWord returns the first SQL word in s that changes data, or "".
func changingWord(s string) string {
	start := -1
	for k := 0; k <= len(s); k++ {
		letter := k < len(s) && (isUpper(s[k]) || isLower(s[k]))
		if letter && start < 0 {
			start = k
		}
		if !letter && start >= 0 {
			if w := strings.ToUpper(s[start:k]); sqlChanging[w] {
				return w
			}
			start = -1
		}
	}
	return ""
}

// sqlArgPlain reports whether the first argument of the SQL call at c is
// a plain literal, or a name bound once to plain literals and otherwise
// only passed to SQL calls.
func (j *judge) sqlArgPlain(c int, args map[int]bool, plain map[string]bool) bool {
	a := j.args(c + 1)
	if len(a) == 0 {
		return true
	}
	if j.literals(a[0]) {
		return true
	}
	if a[0].hi-a[0].lo != 1 || j.kind(a[0].lo) != tIdent {
		return false
	}
	name := j.toks[a[0].lo].text
	ok, seen := plain[name]
	if !seen {
		ok = j.boundToLiteral(name, args)
		plain[name] = ok
	}
	return ok
}

// literals reports whether a span is one or more adjacent plain strings.
func (j *judge) literals(a span) bool {
	for k := a.lo; k < a.hi; k++ {
		if j.toks[k].kind != tStr || j.toks[k].built {
			return false
		}
	}
	return a.hi > a.lo
}

// boundToLiteral reports whether every use of name is either its one
// binding "name = 'literal' …" or the argument of an SQL call. Any other
// use (+=, a loop, a call) could change what it holds.
func (j *judge) boundToLiteral(name string, args map[int]bool) bool {
	bindings := 0
	for k, t := range j.toks {
		if t.kind != tIdent || t.text != name || j.is(k-1, ".") || args[k] {
			continue
		}
		if !j.is(k+1, "=") {
			return false
		}
		end := k + 2
		for j.kind(end) == tStr && !j.toks[end].built {
			end++
		}
		if end == k+2 || !j.endsStatement(end) {
			return false
		}
		bindings++
	}
	return bindings == 1
}

// endsStatement reports whether token k cannot continue an expression
// that began before it: the end, a semicolon, or a name that is not an
// operator word.
func (j *judge) endsStatement(k int) bool {
	switch {
	case k >= len(j.toks) || j.is(k, ";"):
		return true
	case j.kind(k) == tIdent:
		switch j.toks[k].text {
		case "if", "else", "and", "or", "not", "in", "is", "for", "instanceof":
			return false
		}
		return true
	}
	return false
}

// orm judges mass writes through an ORM: update, create and the like are
// ordinary names on a dict or a set, but not where objects, query or
// session is named too.
func (j *judge) orm() string {
	seen := false
	for _, t := range j.toks {
		if t.kind == tIdent && ormNames[t.lower] {
			seen = true
			break
		}
	}
	if !seen {
		return ""
	}
	for i, t := range j.toks {
		if w := t.lower; t.kind == tIdent && ormWrites[w] && j.is(i-1, ".") && j.is(i+1, "(") {
			return "names a destructive operation (" + w + ")"
		}
	}
	return ""
}
