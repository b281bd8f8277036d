package rules

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Pattern is a compiled rule pattern with a cheap test in front of the
// regular expression: most lines a rule sees cannot match it, and most of
// those lack a piece of text every match contains ("169.254.169.254",
// "push", "--force"). The pieces are derived from the expression itself
// when the table is compiled, so the test can only skip the expression
// where it could not match: the result is always the expression's. An
// expression that matches only a finite set of whole strings is that
// set.
type Pattern struct {
	expr string
	// Whole is every string the expression matches, when it matches
	// only whole strings from a finite set (^(echo|printf|grep)$): the
	// set answers alone. Nil otherwise.
	Whole map[string]bool
	// Needs lists strings of which every match contains at least one;
	// nil when no such list is known.
	Needs []string
	// Lead is the class, as pairs of rune ranges, of which a match's
	// first character is one, when that is all the expression asks
	// (^[^@]: any name that is not a fact): the first character answers
	// alone. Nil otherwise.
	Lead []rune
	// re is the compiled expression, made the first time a line gets
	// past the tests above: many never need it (whole sets, patterns of
	// rules no command reaches), and compiling them all would cost every
	// process that starts a gate milliseconds.
	re     *regexp.Regexp
	reOnce sync.Once
}

// maxNeeds bounds the strings tested before an expression: a longer list
// costs about what the expression costs.
const maxNeeds = 48

// compilePattern parses expr as [regexp.Compile] does, reporting the same
// errors, and derives what its matches must contain.
func compilePattern(expr string) (*Pattern, error) {
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err // what regexp.Compile returns
	}
	p := &Pattern{expr: expr}
	parsed = parsed.Simplify()
	if rest, ok := anchoredStart(parsed); ok {
		if names, ok := wholeNames(rest); ok {
			p.Whole = make(map[string]bool, len(names))
			for _, n := range names {
				p.Whole[n] = true
			}
			return p, nil
		}
		if lead, ok := leadingClass(rest); ok {
			p.Lead = lead
			return p, nil
		}
	}
	if needs, ok := required(parsed); ok {
		p.Needs = minimalNeeds(needs)
	}
	return p, nil
}

// minimalNeeds drops from needs each string that holds another of them:
// a line that contains "usr/" contains "usr", so testing "usr" alone
// answers for both, and a prefilter of system paths tests a handful of
// strings instead of dozens.
func minimalNeeds(needs []string) []string {
	out := needs[:0:0]
	for i, n := range needs {
		redundant := false
		for j, m := range needs {
			if j != i && strings.Contains(n, m) && (len(m) < len(n) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, n)
		}
	}
	return out
}

// String returns the expression.
func (p *Pattern) String() string { return p.expr }

// Regexp returns the compiled expression, compiling it on first use.
// The expression parsed when the pattern was made, so it compiles.
func (p *Pattern) Regexp() *regexp.Regexp {
	p.reOnce.Do(func() { p.re = regexp.MustCompile(p.expr) })
	return p.re
}

// MatchString reports whether s holds a match of the expression.
func (p *Pattern) MatchString(s string) bool {
	if p.Whole != nil {
		return p.Whole[s]
	}
	if p.Lead != nil {
		r, _ := utf8.DecodeRuneInString(s) // an invalid byte is U+FFFD, as for regexp
		return s != "" && inClass(p.Lead, r)
	}
	if p.Needs != nil && !containsAny(s, p.Needs) {
		return false
	}
	return p.Regexp().MatchString(s)
}

// leadingClass returns the ranges of re when re, the part of a pattern
// after its start anchor, is one character class and nothing else.
func leadingClass(re *syntax.Regexp) ([]rune, bool) {
	for re.Op == syntax.OpConcat {
		subs := slices.DeleteFunc(slices.Clone(re.Sub), func(s *syntax.Regexp) bool { return s.Op == syntax.OpEmptyMatch })
		if len(subs) != 1 {
			return nil, false
		}
		re = subs[0]
	}
	if re.Op != syntax.OpCharClass || len(re.Rune) == 0 {
		return nil, false
	}
	return slices.Clone(re.Rune), true
}

// inClass reports whether r is in one of the ranges of class (pairs of
// first and last rune).
func inClass(class []rune, r rune) bool {
	for i := 0; i+1 < len(class); i += 2 {
		if class[i] <= r && r <= class[i+1] {
			return true
		}
	}
	return false
}

func containsAny(s string, needs []string) bool {
	for _, n := range needs {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// required returns strings of which every match of re contains at least
// one, or false when it knows none. It errs towards false: case-folded
// text, optional parts and large classes of characters say nothing.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 || slices.Contains(re.Rune, utf8.RuneError) {
			// U+FFFD also stands for any invalid byte of the input.
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] >= 8 || re.Rune[i] <= utf8.RuneError && utf8.RuneError <= re.Rune[i+1] {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
			}
		}
		return out, len(out) > 0 && len(out) <= 8
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return required(re.Sub[0])
	case syntax.OpConcat:
		// Any one part's strings will do; the part whose shortest string
		// is longest rules out the most.
		var best []string
		for _, sub := range re.Sub {
			s, ok := required(sub)
			if ok && (best == nil || shortest(s) > shortest(best) || shortest(s) == shortest(best) && len(s) < len(best)) {
				best = s
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s, ok := required(sub)
			if !ok {
				return nil, false
			}
			for _, x := range s {
				if !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
			if len(out) > maxNeeds {
				return nil, false
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

func shortest(ss []string) int {
	n := -1
	for _, s := range ss {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}

// patternResults remembers what patterns answered on one command's
// argument line: rules of one program often share a pattern (-r, the
// system directories, rsync's --delete and --dry-run), which then runs
// once per command. It holds a few answers, the most a command is likely
// to need; beyond them patterns simply run again.
type patternResults struct {
	n    int
	pats [8]*Pattern
	ok   [8]bool
}

// match returns p.MatchString(s), remembered for p. s must be the same
// string for every call on one patternResults.
func (m *patternResults) match(p *Pattern, s string) bool {
	for i := range m.n {
		if m.pats[i] == p {
			return m.ok[i]
		}
	}
	ok := p.MatchString(s)
	if m.n < len(m.pats) {
		m.pats[m.n], m.ok[m.n] = p, ok
		m.n++
	}
	return ok
}
