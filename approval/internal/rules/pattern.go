package rules

import (
	"fmt"
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
	expr    string
	derived sync.Once
	err     error          // why expr does not parse
	parsed  *syntax.Regexp // expr parsed and simplified, once derived
	// Whole is every string the expression matches, when it matches
	// only whole strings from a finite set (^(echo|printf|grep)$): the
	// set answers alone. Nil otherwise.
	Whole map[string]bool
	// Needs lists strings of which every match contains at least one;
	// nil when no such list is known.
	Needs []string
	// needsFirst: Needs is tested before the expression. A long list is
	// not when the expression has a dfa, which reads the line once where
	// the list reads it once a string.
	needsFirst bool
	// Lead is the class, as pairs of rune ranges, of which a match's
	// first character is one, when that is all the expression asks
	// (^[^@]: any name that is not a fact): the first character answers
	// alone. Nil otherwise.
	Lead []rune
	// Token stands for the expression when it is (^| )X( |$) and X
	// cannot match a space: such an expression matches a line exactly
	// when one of the line's space-separated tokens matches ^X$ whole,
	// which Token is. Tokens are short and first tells most of them
	// apart at their first byte, where the expression would be tried at
	// every position of the line. Nil otherwise.
	Token *Pattern
	// first holds the bytes a match can start with, for an expression
	// anchored at the start that cannot match the empty string. Nil
	// otherwise.
	first *[256]bool
	// re is the compiled expression, made the first time a line gets
	// past the tests above: many never need it (whole sets, patterns of
	// rules no command reaches), and compiling them all would cost every
	// process that starts a gate milliseconds.
	re     *regexp.Regexp
	reOnce sync.Once
	// dfa runs the expression where a line gets past the tests above,
	// made then; nil if the expression has none (see [dfa]).
	dfa     *dfa
	dfaOnce sync.Once
}

// maxNeeds bounds the strings tested before an expression: a longer list
// costs about what the expression costs.
const maxNeeds = 48

// maxNeedsBeforeDFA is the longest list of needed strings tested before
// an expression's dfa: measured over the gate's corpus (go test -bench
// Gate ./approval), longer lists cost more than the dfa they spare.
const maxNeedsBeforeDFA = 8

// compilePattern parses expr as [regexp.Compile] does, reporting the same
// errors, and derives what its matches must contain.
func compilePattern(expr string) (*Pattern, error) {
	p := lazyPattern(expr)
	p.Derive()
	return p, p.err
}

// lazyPattern is the pattern of expr, derived the first time it is
// used: a check reaches the patterns of a few rules, and deriving all of
// the table's cost every start of runbox milliseconds (go test -bench
// CompilePatterns). The table's expressions are held to parse by its
// tests (FuzzPattern compiles each).
func lazyPattern(expr string) *Pattern { return &Pattern{expr: expr} }

// Derive works out, once, what the expression's matches must hold: the
// fields Whole, Needs, Lead and Token are set after it. MatchString
// calls it first.
func (p *Pattern) Derive() *Pattern {
	p.derived.Do(p.derive)
	return p
}

func (p *Pattern) derive() {
	parsed, err := syntax.Parse(p.expr, syntax.Perl)
	if err != nil {
		p.err = err // what regexp.Compile returns
		return
	}
	parsed = parsed.Simplify()
	p.parsed = parsed
	if rest, ok := anchoredStart(parsed); ok {
		if names, ok := wholeNames(rest); ok {
			p.Whole = make(map[string]bool, len(names))
			for _, n := range names {
				p.Whole[n] = true
			}
			return
		}
		if lead, ok := leadingClass(rest); ok {
			p.Lead = lead
			return
		}
		var set [256]bool
		if nullable := firstBytes(rest, &set); !nullable {
			p.first = &set
		}
	}
	if needs, ok := required(parsed); ok {
		p.Needs = minimalNeeds(needs)
		p.needsFirst = len(p.Needs) <= maxNeedsBeforeDFA || !dfaFollows(parsed)
	}
	if body, ok := tokenBody(parsed); ok {
		p.Token = tokenPattern(p.expr, body)
	}
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

// MatchString reports whether s holds a match of the expression. It
// panics if the expression does not parse, as regexp.MustCompile does.
func (p *Pattern) MatchString(s string) bool {
	if p.Derive().err != nil {
		panic(fmt.Sprintf("rules: pattern %q: %v", p.expr, p.err))
	}
	if p.Whole != nil {
		return p.Whole[s]
	}
	if p.Lead != nil {
		r, _ := utf8.DecodeRuneInString(s) // an invalid byte is U+FFFD, as for regexp
		return s != "" && inClass(p.Lead, r)
	}
	if p.first != nil && (s == "" || !p.first[s[0]]) {
		return false
	}
	if p.needsFirst && !containsAny(s, p.Needs) {
		return false
	}
	if p.Token != nil {
		return p.Token.anyToken(s)
	}
	return p.matchExpr(s)
}

// matchExpr runs the expression over s: its dfa where that can tell,
// the regular expression otherwise.
func (p *Pattern) matchExpr(s string) bool {
	p.dfaOnce.Do(func() { p.dfa = dfaOf(p.parsed) })
	if p.dfa != nil {
		if m, ok := p.dfa.matchString(s); ok {
			return m
		}
	}
	return p.Regexp().MatchString(s)
}

// anyToken reports whether a space-separated token of s matches p.
func (p *Pattern) anyToken(s string) bool {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return p.MatchString(s)
		}
		if p.MatchString(s[:i]) {
			return true
		}
		s = s[i+1:]
	}
}

// tokenBody returns X when re is (^| )X( |$) and X matches no space and
// holds no anchor of its own (which would mean the line's start or end,
// not the token's).
func tokenBody(re *syntax.Regexp) ([]*syntax.Regexp, bool) {
	if re.Op != syntax.OpConcat || len(re.Sub) < 3 {
		return nil, false
	}
	last := len(re.Sub) - 1
	if !spaceOr(re.Sub[0], syntax.OpBeginText) || !spaceOr(re.Sub[last], syntax.OpEndText) {
		return nil, false
	}
	body := re.Sub[1:last]
	for _, x := range body {
		if !spaceless(x) {
			return nil, false
		}
	}
	return body, true
}

// tokenPattern returns ^X$ for expr, (^| )X( |$) as written (after
// flags such as (?i) at most), whose parse gave body as X; nil when expr
// is not written so. The text is cut from expr, and its parse must give
// body again: printing body instead (syntax.Regexp.String) would cost
// milliseconds a pattern, folding the case of every rune of a class
// such as \S, at every start of runbox.
func tokenPattern(expr string, body []*syntax.Regexp) *Pattern {
	const before, after = "(^| )", "( |$)"
	i := strings.Index(expr, before)
	if i < 0 || !strings.HasSuffix(expr, after) || !flagsOnly(expr[:i]) || i+len(before) > len(expr)-len(after) {
		return nil
	}
	text := expr[:i] + "^(?:" + expr[i+len(before):len(expr)-len(after)] + ")$"
	re, err := syntax.Parse(text, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != len(body)+2 || re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return nil
	}
	for k, x := range body {
		if !sameShape(re.Sub[k+1], x) {
			return nil
		}
	}
	p, err := compilePattern(text)
	if err != nil {
		return nil
	}
	return p
}

// flagsOnly reports whether s is empty or one group of flags, (?i).
func flagsOnly(s string) bool {
	if s == "" {
		return true
	}
	if len(s) < 4 || !strings.HasPrefix(s, "(?") || !strings.HasSuffix(s, ")") {
		return false
	}
	return strings.Trim(s[2:len(s)-1], "imsU") == ""
}

// sameShape is syntax.Regexp.Equal with the capture groups' numbers and
// names left out: a group cut from a longer expression is numbered
// anew.
func sameShape(a, b *syntax.Regexp) bool {
	if a.Op != b.Op || a.Flags != b.Flags || !slices.Equal(a.Rune, b.Rune) || a.Min != b.Min || a.Max != b.Max || len(a.Sub) != len(b.Sub) {
		return false
	}
	for i := range a.Sub {
		if !sameShape(a.Sub[i], b.Sub[i]) {
			return false
		}
	}
	return true
}

// spaceOr reports whether re is (a capture of) the alternation of one
// space and anchor, in either order.
func spaceOr(re *syntax.Regexp, anchor syntax.Op) bool {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpAlternate || len(re.Sub) != 2 {
		return false
	}
	space := func(r *syntax.Regexp) bool {
		return r.Op == syntax.OpLiteral && len(r.Rune) == 1 && r.Rune[0] == ' '
	}
	a, b := re.Sub[0], re.Sub[1]
	return a.Op == anchor && space(b) || b.Op == anchor && space(a)
}

// spaceless reports whether no match of re can hold a space, and re has
// no zero-width assertion.
func spaceless(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return !slices.Contains(re.Rune, ' ')
	case syntax.OpCharClass:
		return !inClass(re.Rune, ' ')
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpCapture, syntax.OpConcat, syntax.OpAlternate, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		for _, sub := range re.Sub {
			if !spaceless(sub) {
				return false
			}
		}
		return true
	}
	return false // any character, anchors, word boundaries
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
