package inline

import "strings"

const (
	unnamedModule = "requires a module it cannot name"
	moduleObject  = "uses a module object directly"
)

// jsBindings finds the names bound to modules, by require or import, and
// judges each require and import on the way. A module may only be bound
// to a plain name or a destructuring of plain names, so that every later
// use of it is in sight.
func (j *judge) jsBindings() string {
	j.bound = map[string]bool{}
	j.decl = map[int]bool{}
	for i, t := range j.toks {
		if t.kind != tIdent || j.is(i-1, ".") || j.is(i-1, "?.") {
			continue
		}
		var why string
		switch t.text {
		case "require":
			why = j.jsRequire(i)
		case "import":
			why = j.jsImport(i)
		}
		if why != "" {
			return why
		}
	}
	return ""
}

// jsRequire judges require at i: it takes one plain string naming an
// allowed module (or is require.resolve), and its result is bound, used
// through a member, or dropped.
func (j *judge) jsRequire(i int) string {
	if j.is(i+1, ".") && j.identAt(i+2, "resolve") {
		return ""
	}
	if why := j.jsSpecifier(i + 1); why != "" {
		return why
	}
	return j.jsResult(i, j.match[i+1])
}

// jsSpecifier judges the argument list at open: one plain string, no
// escapes, naming a module that is not forbidden.
func (j *judge) jsSpecifier(open int) string {
	a := j.args(open)
	if len(a) != 1 {
		return unnamedModule
	}
	s, ok := j.plainString(a[0])
	if !ok || strings.ContainsAny(s, "\\$") {
		return unnamedModule
	}
	if m := jsModuleName(s); jsModules[m] {
		return "requires " + m
	}
	return ""
}

// jsResult judges what becomes of a module value made by the tokens from
// start to end: a member chain, a binding, or a statement of its own.
func (j *judge) jsResult(start, end int) string {
	if j.is(end+1, ".") || j.is(end+1, "?.") {
		return j.jsChain(end, "")
	}
	if j.is(start-1, "=") {
		return j.jsBind(start - 2)
	}
	if start == 0 || j.is(start-1, ";") || j.is(start-1, "}") {
		if !j.is(end+1, "[") && !j.is(end+1, "(") {
			return ""
		}
	}
	return moduleObject
}

// jsBind records the target of "target = module": a name, or a pattern
// of plain names in braces. Anything else could hide the module.
func (j *judge) jsBind(k int) string {
	switch {
	case j.kind(k) == tIdent && !j.is(k-1, ".") && !j.is(k-1, "?."):
		j.bound[j.toks[k].text], j.decl[k] = true, true
		return ""
	case j.is(k, "}"):
		return j.jsPattern(j.match[k], k)
	}
	return moduleObject
}

// jsPattern records the names of a destructuring pattern { a, b: c }. A
// computed key or a rest element would let the program reach any member.
func (j *judge) jsPattern(lo, hi int) string {
	for k := lo + 1; k < hi; k++ {
		switch {
		case j.kind(k) == tIdent:
			j.bound[j.toks[k].text], j.decl[k] = true, true
		case j.is(k, ",") || j.is(k, ":"):
		default:
			return moduleObject
		}
	}
	return ""
}

// jsImport judges import at i: import.meta, a static import declaration,
// or a dynamic import( ) whose value is awaited into a binding.
func (j *judge) jsImport(i int) string {
	switch {
	case j.is(i+1, "."):
		return ""
	case j.is(i+1, "("):
		if why := j.jsSpecifier(i + 1); why != "" {
			return why
		}
		if j.identAt(i-1, "await") && j.is(i-2, "=") {
			return j.jsBind(i - 3)
		}
		return "imports a module at run time"
	}
	return j.jsStaticImport(i)
}

// jsStaticImport judges import a, {b as c}, * as d from 'm' and import
// 'm', binding every name before the specifier.
func (j *judge) jsStaticImport(i int) string {
	k := i + 1
	for ; k < len(j.toks) && j.toks[k].kind != tStr; k++ {
		switch {
		case j.kind(k) == tIdent:
			if t := j.toks[k].text; t != "as" && t != "from" && t != "type" {
				j.bound[t], j.decl[k] = true, true
			}
		case j.is(k, "{") || j.is(k, "}") || j.is(k, ",") || j.is(k, "*"):
		default:
			return unnamedModule
		}
	}
	if k == len(j.toks) || j.toks[k].built || strings.ContainsAny(j.toks[k].text, "\\$") {
		return unnamedModule
	}
	if m := jsModuleName(j.toks[k].text); jsModules[m] {
		return "imports " + m
	}
	return ""
}

// jsIdent judges a JavaScript name by its context: a use of a module
// bound earlier, or of a runtime global, must go through a named member.
func (j *judge) jsIdent(i int) string {
	t := j.toks[i].text
	if j.decl[i] || j.is(i-1, ".") || j.is(i-1, "?.") || !j.bound[t] && !jsGlobals[t] {
		return ""
	}
	if j.is(i+1, "(") {
		return ""
	}
	if !j.is(i+1, ".") && !j.is(i+1, "?.") {
		return moduleObject + " (" + t + ")"
	}
	return j.jsChain(i, t)
}

// jsChain follows the member chain after token at (a module value) and
// judges where it ends: a call, a data member, or another member read.
// Indexing anything but plain data could reach any function by a name
// built at run time; Deno and Bun may only be used through members that
// read.
func (j *judge) jsChain(at int, root string) string {
	k, last := at, ""
	for (j.is(k+1, ".") || j.is(k+1, "?.")) && j.kind(k+2) == tIdent {
		k += 2
		last = j.toks[k].text
		if k == at+2 && (root == "Deno" || root == "Bun") && !runtimeAllowed[last] {
			return "calls " + root + "." + last
		}
	}
	switch {
	case last == "":
		return moduleObject
	case j.is(k+1, "[") && !dataMembers[last]:
		return moduleObject + " (" + last + "[…])"
	case last == "promises" && !j.is(k+1, "("):
		return moduleObject + " (promises)"
	}
	return ""
}
