package rules

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Index finds, for a command's name, the rules that can match it, so
// that a command is tested against a handful of rules instead of the whole
// table. Nothing in the rule table describes the index: it is derived from
// each rule's Command pattern when the table is compiled, so a new rule is
// indexed without any further work.
//
// A rule is filed under
//   - each name its pattern can match, when the pattern matches a finite
//     set of whole names (^(rm|srm)$, ^@(too-complex|too-deep)$);
//   - otherwise each byte a matching name can start with, when the
//     pattern is anchored at the start and cannot match the empty string
//     (^(mkfs(\.[a-z0-9]+)?|…)$, ^[^@]);
//   - otherwise under every name: the catch-all (no Command pattern, as in
//     rules on the environment alone, or a pattern anchored nowhere).
//
// The index leaves out only rules that cannot match: every candidate is
// still tested by [Compiled.matches], so filing a rule too widely
// costs time, never a verdict. Each list is in table order, which keeps the
// findings (and so the reasons of a verdict) in the order a full scan
// gives.
type Index struct {
	// ByName holds, for each name some rule's Command or NotCommand lists,
	// exactly the rules whose name tests let it through.
	ByName map[string][]*Compiled
	// byFirst holds, by a name's first byte, the rules filed under that
	// byte and the catch-all.
	byFirst [256][]*Compiled
	// empty holds the rules that can match a command without a name.
	empty []*Compiled
}

// maxIndexNames bounds the names enumerated from one pattern; a pattern
// that matches more is filed by its first bytes instead.
const maxIndexNames = 512

// compiledIndex indexes the compiled table once per process; like the
// table, it is constant.
var compiledIndex = sync.OnceValues(func() (*Index, error) {
	table, err := compiledRules()
	if err != nil {
		return nil, err
	}
	return newRuleIndex(table)
})

// TableIndex returns the index of the compiled rule table, the same for
// every caller.
func TableIndex() (*Index, error) { return compiledIndex() }

// newRuleIndex files every rule of table (see [Index]).
func newRuleIndex(table []*Compiled) (*Index, error) {
	pos := make(map[*Compiled]int, len(table))
	named := make(map[string][]*Compiled)
	var first [256][]*Compiled
	var all []*Compiled
	for i, r := range table {
		pos[r] = i
		names, starts, err := ruleKeys(r.Command)
		if err != nil {
			return nil, fmt.Errorf("approval: rule %s: %w", r.ID, err)
		}
		switch {
		case names != nil:
			for _, n := range names {
				named[n] = append(named[n], r)
			}
		case starts != nil:
			for b, ok := range starts {
				if ok {
					first[b] = append(first[b], r)
				}
			}
		default:
			all = append(all, r)
		}
		// The names a rule excludes get lists of their own too, without
		// the rules that exclude them (prose such as echo or grep); a nil
		// entry makes the key and files no rule.
		excluded, _, err := ruleKeys(r.NotCommand)
		if err != nil {
			return nil, fmt.Errorf("approval: rule %s: %w", r.ID, err)
		}
		for _, n := range excluded {
			named[n] = append(named[n], nil)
		}
	}
	// merge joins lists in table order; with a name, it keeps only the
	// rules whose name tests let that name through, which for a list of
	// one name is exact.
	merge := func(name *string, lists ...[]*Compiled) []*Compiled {
		var out []*Compiled
		for _, l := range lists {
			for _, r := range l {
				if r != nil && !slices.Contains(out, r) && (name == nil || r.NameMatches(*name)) {
					out = append(out, r)
				}
			}
		}
		slices.SortFunc(out, func(a, b *Compiled) int { return pos[a] - pos[b] })
		return slices.Clip(out)
	}
	ix := &Index{ByName: make(map[string][]*Compiled, len(named))}
	for b := range ix.byFirst {
		ix.byFirst[b] = merge(nil, first[b], all)
	}
	empty := ""
	ix.empty = merge(&empty, named[""], all)
	for n, rs := range named {
		if n == "" {
			continue
		}
		ix.ByName[n] = merge(&n, rs, first[n[0]], all)
	}
	return ix, nil
}

// Candidates returns the rules that can match a command named name, in
// table order. The slice is shared: callers must not change it.
func (ix *Index) Candidates(name string) []*Compiled {
	if rs, ok := ix.ByName[name]; ok {
		return rs
	}
	if name == "" {
		return ix.empty
	}
	return ix.byFirst[name[0]]
}

// Judge runs over every command the rules that can match it. A name's
// own list holds only rules whose name tests let it through, so those
// tests are not run again for it.
func (ix *Index) Judge(cmds []Command) []Finding {
	var out []Finding
	for i := range cmds {
		s := subject{c: &cmds[i]}
		rs, exact := ix.ByName[cmds[i].Name]
		if !exact {
			rs = ix.Candidates(cmds[i].Name)
		}
		for _, r := range rs {
			if (exact || r.NameMatches(cmds[i].Name)) && r.matchesRest(&s) {
				out = append(out, Finding{Rule: r, Cmd: &cmds[i]})
			}
		}
	}
	return out
}

// ruleKeys derives where a Command pattern is filed: the whole names it
// can match (names non-nil), or else the bytes a name it matches can
// start with (starts non-nil), or else neither (the catch-all). The
// pattern is parsed as [Regexp.Compile] parses it.
func ruleKeys(pattern string) (names []string, starts *[256]bool, err error) {
	if pattern == "" {
		return nil, nil, nil
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, nil, err
	}
	re = re.Simplify()
	rest, ok := anchoredStart(re)
	if !ok {
		return nil, nil, nil
	}
	if names, ok := wholeNames(rest); ok {
		return names, nil, nil
	}
	var set [256]bool
	if nullable := firstBytes(rest, &set); nullable {
		return nil, nil, nil // "^" then something optional matches any name
	}
	return nil, &set, nil
}

// anchoredStart returns what follows a leading ^ (the start of the text)
// in every branch of re, as one expression; ok is false if some branch is
// not anchored there.
func anchoredStart(re *syntax.Regexp) (*syntax.Regexp, bool) {
	switch re.Op {
	case syntax.OpBeginText:
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}, true
	case syntax.OpCapture:
		return anchoredStart(re.Sub[0])
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return nil, false
		}
		head, ok := anchoredStart(re.Sub[0])
		if !ok {
			return nil, false
		}
		subs := append([]*syntax.Regexp{head}, re.Sub[1:]...)
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}, true
	case syntax.OpAlternate:
		alt := &syntax.Regexp{Op: syntax.OpAlternate}
		for _, sub := range re.Sub {
			s, ok := anchoredStart(sub)
			if !ok {
				return nil, false
			}
			alt.Sub = append(alt.Sub, s)
		}
		return alt, true
	}
	return nil, false
}

// wholeNames enumerates the strings re matches when what it matches ends
// at the end of the text ($) in every branch and is a finite set of at
// most maxIndexNames strings.
func wholeNames(re *syntax.Regexp) ([]string, bool) {
	names, ok := language(re)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !n.end {
			return nil, false // the match may stop before the name does
		}
		if !slices.Contains(out, n.s) {
			out = append(out, n.s)
		}
	}
	return out, true
}

// piece is a string a pattern matches; end says the pattern requires the
// end of the text right after it.
type piece struct {
	s   string
	end bool
}

// language enumerates the strings re can match, or reports false when
// they are too many, unbounded, or depend on something other than the
// text (case folding, line or word boundaries).
func language(re *syntax.Regexp) ([]piece, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []piece{{}}, true
	case syntax.OpEndText:
		return []piece{{end: true}}, true
	case syntax.OpLiteral:
		// U+FFFD also stands for any invalid byte of the text.
		if re.Flags&syntax.FoldCase != 0 || slices.Contains(re.Rune, utf8.RuneError) {
			return nil, false
		}
		return []piece{{s: string(re.Rune)}}, true
	case syntax.OpCharClass:
		// Sized first: a class such as \S holds a million runes, and
		// the enumeration would stop only after maxIndexNames of them.
		size := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			size += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if size > maxIndexNames {
			return nil, false
		}
		var out []piece
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= utf8.RuneError && utf8.RuneError <= re.Rune[i+1] {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) >= maxIndexNames {
					return nil, false
				}
				out = append(out, piece{s: string(r)})
			}
		}
		return out, true
	case syntax.OpCapture:
		return language(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := language(re.Sub[0])
		return append(sub, piece{}), ok
	case syntax.OpAlternate:
		var out []piece
		for _, s := range re.Sub {
			l, ok := language(s)
			if !ok || len(out)+len(l) > maxIndexNames {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, true
	case syntax.OpConcat:
		out := []piece{{}}
		for _, s := range re.Sub {
			l, ok := language(s)
			if !ok || len(out)*len(l) > maxIndexNames {
				return nil, false
			}
			next := make([]piece, 0, len(out)*len(l))
			for _, a := range out {
				for _, b := range l {
					switch {
					case a.end && b.s != "":
						// Text after the end: matches nothing.
					default:
						next = append(next, piece{s: a.s + b.s, end: a.end || b.end})
					}
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// firstBytes adds to set every byte a match of re can start with, and
// reports whether re can match the empty string. It over-approximates:
// any rune beyond ASCII adds every byte from 0x80 up (which also covers
// invalid UTF-8, which the regexp engine reads as U+FFFD), and a
// zero-width assertion counts as matching the empty string.
func firstBytes(re *syntax.Regexp, set *[256]bool) (nullable bool) {
	addRange := func(lo, hi rune) {
		for r := max(lo, 0); r <= min(hi, 0x7f); r++ {
			set[r] = true
		}
		if hi >= 0x80 {
			for b := 0x80; b < 256; b++ {
				set[b] = true
			}
		}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return true
		}
		r := re.Rune[0]
		addRange(r, r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				addRange(f, f)
			}
		}
		return false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			addRange(re.Rune[i], re.Rune[i+1])
		}
		return false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		addRange(0, 0x10ffff)
		return false
	case syntax.OpCapture:
		return firstBytes(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		firstBytes(re.Sub[0], set)
		return true
	case syntax.OpPlus:
		return firstBytes(re.Sub[0], set)
	case syntax.OpRepeat:
		n := firstBytes(re.Sub[0], set)
		return n || re.Min == 0
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !firstBytes(s, set) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if firstBytes(s, set) {
				nullable = true
			}
		}
		return nullable
	}
	// Empty matches and zero-width assertions (^ $ \b \B).
	return true
}
