package inline

import (
	"fmt"
	"strings"
)

// judge holds one token stream and what was learnt of it; it lives for
// one call of Quiet.
type judge struct {
	js    bool
	toks  []token
	match []int // for each bracket, the index of its partner; else -1

	// JavaScript only: names bound to modules and where they are bound.
	bound map[string]bool
	decl  map[int]bool
}

// newJudge pairs the brackets of toks; it fails when they do not pair.
func newJudge(lang Lang, toks []token) (*judge, bool) {
	j := &judge{js: lang == JavaScript, toks: toks, match: make([]int, len(toks))}
	var stack []int
	for i, t := range toks {
		j.match[i] = -1
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			stack = append(stack, i)
		case ")", "]", "}":
			if len(stack) == 0 || !pair(toks[stack[len(stack)-1]].text, t.text) {
				return nil, false
			}
			open := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			j.match[open], j.match[i] = i, open
		}
	}
	return j, len(stack) == 0
}

func pair(open, close string) bool {
	return open == "(" && close == ")" || open == "[" && close == "]" || open == "{" && close == "}"
}

// verdict returns the first reason the program is not quiet, in source
// order, then the reasons that need the whole program; "" when quiet.
func (j *judge) verdict() string {
	if j.js {
		if why := j.jsBindings(); why != "" {
			return why
		}
	}
	for i := range j.toks {
		if why := j.token(i); why != "" {
			return why
		}
	}
	if why := j.orm(); why != "" {
		return why
	}
	return j.sql()
}

// token judges one token in its immediate context.
func (j *judge) token(i int) string {
	t := j.toks[i]
	switch t.kind {
	case tStr:
		return j.literal(t)
	case tIdent:
		if j.js {
			return firstOf(j.jsIdent(i), j.name(i))
		}
		return firstOf(j.pyIdent(i), j.name(i))
	}
	return ""
}

func firstOf(whys ...string) string {
	for _, w := range whys {
		if w != "" {
			return w
		}
	}
	return ""
}

// literal judges a string literal by itself: a URL means the network, and
// in JavaScript the name of a forbidden module is enough, however it is
// reached (module.require, process.mainModule.require, import()).
func (j *judge) literal(t token) string {
	if strings.Contains(t.text, "://") {
		return "uses the network (url)"
	}
	if j.js {
		if m := jsModuleName(t.text); jsModules[m] {
			return "names module " + m
		}
	}
	return ""
}

// jsModuleName is the package a module specifier names: without node:,
// and without a subpath (fs/promises is fs, @scope/x stays whole).
func jsModuleName(spec string) string {
	spec = strings.TrimPrefix(spec, "node:")
	if strings.HasPrefix(spec, "@") {
		return spec
	}
	if k := strings.IndexByte(spec, '/'); k >= 0 {
		return spec[:k]
	}
	return spec
}

// name judges an identifier by the groups its lower-cased whole and parts
// fall in, unless its context excuses it.
func (j *judge) name(i int) string {
	t := j.toks[i].text
	if g := j.caseWord(t); g != 0 {
		return fmt.Sprintf(formats[g], j.qualified(i))
	}
	lower := j.toks[i].lower
	if wholeAllowed[lower] {
		return ""
	}
	why := ""
	eachPart(t, lower, func(w string) bool {
		if g := j.groupOf(w); g != 0 && !j.excused(i, w) {
			why = fmt.Sprintf(formats[g], j.qualified(i))
			return false
		}
		return true
	})
	return why
}

func (j *judge) caseWord(t string) group {
	if !isUpper(t[0]) {
		return 0 // every case-sensitive name is capitalised
	}
	if j.js {
		return jsCaseWords[t]
	}
	return pyCaseWords[t]
}

// groupOf finds the group of one lower-cased word. Every exec… name but
// the SQL calls starts a program (execv, execSync, execFile), and so does
// every spawn… name.
func (j *judge) groupOf(w string) group {
	if g := words[w]; g != 0 {
		return g
	}
	if j.js {
		if g := jsWords[w]; g != 0 {
			return g
		}
	}
	if strings.HasPrefix(w, "exec") && !sqlExempt[w] || strings.HasPrefix(w, "spawn") {
		return gProcess
	}
	return 0
}

// eachPart calls f with the whole lower-cased name, then each part of it
// split at _ and at camelCase boundaries, lower-cased, until f says stop.
func eachPart(name, lower string, f func(string) bool) {
	if !f(lower) {
		return
	}
	start := 0
	for k := 1; k <= len(name); k++ {
		if k < len(name) && !partBreak(name, k) {
			continue
		}
		part := strings.Trim(lower[start:k], "_")
		start = k
		if part != "" && part != lower && !f(part) {
			return
		}
	}
}

// partBreak reports whether a new part starts at k: at an underscore, at
// a lower-to-upper step (execSync), and before the last capital of a run
// followed by a lower-case letter (HTTPServer).
func partBreak(s string, k int) bool {
	c, p := s[k], s[k-1]
	switch {
	case c == '_':
		return true
	case isUpper(c) && (isLower(p) || isDigit(p)):
		return true
	case isUpper(c) && isUpper(p) && k+1 < len(s) && isLower(s[k+1]):
		return true
	}
	return false
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

// excused reports whether word w of the name at i is harmless where it
// stands: platform.system reads the OS name, sys.stdout.write prints,
// print(…, flush=True) flushes stdout, re.compile builds a pattern, not
// code, and pandas' drop(columns=…) returns a new frame.
func (j *judge) excused(i int, w string) bool {
	recv := j.receiver(i)
	switch w {
	case "system":
		return recv == "platform"
	case "write", "writelines":
		return recv == "stdout" || recv == "stderr"
	case "flush":
		return recv == "stdout" || recv == "stderr" || j.keywordName(i)
	case "compile":
		return recv == "re" || recv == "regex"
	case "drop":
		return j.is(i-1, ".") && j.hasKeyword(i+1, "columns", "index", "labels", "axis") ||
			j.keywordName(i)
	case "delete":
		// The JS delete operator removes a property, not a file.
		return j.js && !j.is(i-1, ".") && j.kind(i+1) == tIdent
	}
	return false
}

// keywordName reports whether the name at i names a keyword argument
// (reset_index(drop=True)), a parameter rather than an operation.
func (j *judge) keywordName(i int) bool {
	return j.is(i+1, "=") && (j.is(i-1, "(") || j.is(i-1, ","))
}

// receiver is the name before ".name" at i, or "".
func (j *judge) receiver(i int) string {
	if i >= 2 && (j.is(i-1, ".") || j.is(i-1, "?.")) && j.toks[i-2].kind == tIdent {
		return j.toks[i-2].text
	}
	return ""
}

// qualified is the name at i with its receiver, as a reason shows it.
func (j *judge) qualified(i int) string {
	if r := j.receiver(i); r != "" {
		return r + "." + j.toks[i].text
	}
	return j.toks[i].text
}

// is reports whether token k is the punctuation p.
func (j *judge) is(k int, p string) bool {
	return k >= 0 && k < len(j.toks) && j.toks[k].kind == tPunct && j.toks[k].text == p
}

func (j *judge) kind(k int) kind {
	if k < 0 || k >= len(j.toks) {
		return 0
	}
	return j.toks[k].kind
}

func (j *judge) identAt(k int, name string) bool {
	return j.kind(k) == tIdent && j.toks[k].text == name
}
