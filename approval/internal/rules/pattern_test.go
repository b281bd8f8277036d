package rules

import (
	"maps"
	"slices"
	"testing"
)

// TestRuleKeys files patterns of each shape where the index expects them.
func TestRuleKeys(t *testing.T) {
	tests := []struct {
		pattern string
		names   []string // nil: not a finite set of names
		starts  string   // bytes a name can start with; "" with names nil: catch-all
	}{
		{pattern: `^rm$`, names: []string{"rm"}},
		{pattern: `^(rm|srm)$`, names: []string{"rm", "srm"}},
		{pattern: `^@(too-complex|too-deep)$`, names: []string{"@too-complex", "@too-deep"}},
		{pattern: `^(apt|apt-get|aptitude)$`, names: []string{"apt", "apt-get", "aptitude"}},
		{pattern: `^git(-lfs)?$`, names: []string{"git-lfs", "git"}},
		{pattern: `^rm[0-3]$`, names: []string{"rm0", "rm1", "rm2", "rm3"}},
		{pattern: `^rm$|^srm$`, names: []string{"rm", "srm"}},
		{pattern: `^(mkfs(\.[a-z0-9]+)?|newfs)$`, starts: "mn"},
		{pattern: `^(pip[0-9.]+|apt)$`, starts: "pa"},
		{pattern: `^rm`, starts: "r"},
		{pattern: `(?i)^rm$`, starts: "rR"},
		{pattern: `^[a-c]x+`, starts: "abc"},
		{pattern: `rm`},
		{pattern: `^x?`},
		{pattern: `^rm$|srm`},
		{pattern: `^$`, names: []string{""}},
		{pattern: ``},
	}
	for _, tt := range tests {
		names, starts, err := ruleKeys(tt.pattern)
		if err != nil {
			t.Fatalf("ruleKeys(%q): %v", tt.pattern, err)
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(tt.names))
		if !slices.Equal(names, want) || (names == nil) != (want == nil) {
			t.Errorf("ruleKeys(%q) names = %q; want %q", tt.pattern, names, want)
		}
		var got string
		if starts != nil {
			for b, ok := range starts {
				if ok {
					got += string(rune(b))
				}
			}
		}
		if wantStarts := string(slices.Sorted(slices.Values([]byte(tt.starts)))); got != wantStarts {
			t.Errorf("ruleKeys(%q) starts = %q; want %q", tt.pattern, got, wantStarts)
		}
	}
	// U+FFFD in a pattern also matches any invalid byte: such a name is
	// filed by every byte from 0x80, never as the three bytes of U+FFFD.
	names, starts, _ := ruleKeys(`^\x{FFFD}$`)
	if names != nil || starts == nil || !starts[0xff] || !starts[0xef] || starts['a'] {
		t.Errorf("ruleKeys(`^\\x{FFFD}$`) = %q, %v", names, starts)
	}
	// A negated class starts with every byte it does not exclude.
	_, starts, _ = ruleKeys(`^[^@]`)
	if starts == nil || starts['@'] || !starts['a'] || !starts[0xff] || !starts[0] {
		t.Errorf("ruleKeys(`^[^@]`) starts = %v", starts)
	}
}

// TestRequired derives the text every match must hold, and nothing where
// a match may do without it.
func TestRequired(t *testing.T) {
	tests := []struct {
		pattern string
		needs   []string // nil: nothing known
	}{
		{`foo`, []string{"foo"}},
		{`foo|bar`, []string{"foo", "bar"}},
		{`(^| )--force( |$)`, []string{"--force"}},
		{`a?bcd`, []string{"bcd"}},
		{`x+yz`, []string{"yz"}},
		{`push( .*)? --hard`, []string{" --hard"}},
		{`[ab]`, []string{"a", "b"}},
		{`(?i)foo`, nil},
		{`(a|)`, nil},
		{`x*`, nil},
		{`[a-z]`, nil},
		{`\x{FFFD}`, nil},
		{`^$`, nil},
		{`^(echo|printf)$`, nil}, // a set of whole strings instead
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Needs, tt.needs) || (p.Needs == nil) != (tt.needs == nil) {
			t.Errorf("needs of %q = %q; want %q", tt.pattern, p.Needs, tt.needs)
		}
	}
}

// TestPattern_WholeStrings: a pattern that matches only whole strings
// from a finite set is that set, and answers like its regexp.
func TestPattern_WholeStrings(t *testing.T) {
	tests := []struct {
		pattern string
		whole   []string // nil: not such a pattern
	}{
		{`^(echo|printf)$`, []string{"echo", "printf"}},
		{`^git(-lfs)?$`, []string{"git", "git-lfs"}},
		{`^(echo|printf)`, nil},
		{`(echo|printf)$`, nil},
		{`^x+$`, nil},
		{`(?i)^rm$`, nil},
		{`^\x{FFFD}$`, nil},
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(p.Whole))
		if !slices.Equal(got, tt.whole) {
			t.Errorf("whole strings of %q = %q; want %q", tt.pattern, got, tt.whole)
		}
		for _, s := range []string{"echo", "printf", "echox", "git", "git-lfs", "GIT", "rm", "RM", "\xff", "\uFFFD", "x", "xx", ""} {
			if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
				t.Errorf("pattern %q on %q: %v, its regexp says %v", tt.pattern, s, got, want)
			}
		}
	}
}

// BenchmarkGate_Mixed checks the sample of agent commands and every
// rule's examples (what runbox bench's gate.check runs); ns/op is per
// command. "protected" has runbox's own protected paths, as the gate runs

// TestPattern_LeadingClass: a pattern that asks only for its first
// character is answered by that character, like its regexp.
func TestPattern_LeadingClass(t *testing.T) {
	tests := []struct {
		pattern string
		lead    bool
	}{
		{`^[^@]`, true},
		{`^[a-z]`, true},
		{`^[^@]x`, false},
		{`[^@]`, false},
		{`^[^@]$`, false},
		{`^(?i)[a-c]`, true},
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if (p.Lead != nil) != tt.lead {
			t.Errorf("leading class of %q = %q; want one: %v", tt.pattern, p.Lead, tt.lead)
		}
		for _, s := range []string{"", "@", "@x", "a", "B", "\xff", "\uFFFD", "é", "\n", "x@"} {
			if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
				t.Errorf("pattern %q on %q: %v, its regexp says %v", tt.pattern, s, got, want)
			}
		}
	}
}

// FuzzPattern holds every pattern of the rule table to its regexp, the
// oracle: the shortcuts a pattern takes (a set of whole strings, the
// strings a match needs, a leading class) must never change an answer.
func FuzzPattern(f *testing.F) {
	var pats []*Pattern
	for _, r := range All() {
		exprs := append([]string{r.Command, r.NotCommand, r.NotArgs, r.Globals, r.Env, r.Via}, r.Args...)
		for _, e := range exprs {
			if e == "" {
				continue
			}
			p, err := compilePattern(e)
			if err != nil {
				f.Fatalf("rule %s: %v", r.ID, err)
			}
			pats = append(pats, p)
		}
		for _, s := range append(slices.Clone(r.Match), r.NoMatch...) {
			f.Add(s)
		}
	}
	f.Add("@write")
	f.Add("\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range pats {
			if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
				t.Fatalf("pattern %q on %q: %v, its regexp says %v", p, s, got, want)
			}
		}
	})
}

// TestPattern_Tokens: (^| )X( |$), X unable to match a space, is tried
// token by token, and answers like its regexp on lines whose spaces,
// tabs and newlines fall anywhere.
func TestPattern_Tokens(t *testing.T) {
	tests := []struct {
		pattern string
		token   bool
	}{
		{`(^| )(/|~|/(etc|usr)|/home/[^/ ]+)( |$)`, true},
		{`(?i)(^| )(-9|-kill)( |$)`, true},
		{`(^| )(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)( |$)`, true},
		{`(^| )-x?( |$)`, true},   // X may match the empty token
		{`(^| )a b( |$)`, false},  // X holds a space
		{`(^| )a.( |$)`, false},   // . matches a space
		{`(^| )\S+$( |$)`, false}, // an anchor inside X
		{`(^| |,)-f( |$)`, false}, // not only a space before
		{`(^| )-f( |,|$)`, false}, // not only a space after
		{`x(^| )-f( |$)`, false},  // something before
		{`(^| )(-f|--force)=\S*( |$)`, true},
	}
	lines := []string{"", " ", "  ", "-f", " -f", "-f ", "a -f b", "a  -f", "a\t-f", "a\n-f", "-x", "", "-", "a - b", "/etc", "x /etc/ y",
		"/home/u", "/home/u/x", "~", "a ~ b", "-KILL", "-Kill x", "-9", "-rf /", "--recursive", "--force=", "--force=x y", "a b", "ab", "a\xffb -f"}
	for _, tt := range tests {
		p, err := compilePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if (p.Token != nil) != tt.token {
			t.Errorf("%q tried by tokens: %v; want %v", tt.pattern, p.Token != nil, tt.token)
		}
		for _, s := range lines {
			if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
				t.Errorf("pattern %q on %q: %v, its regexp says %v", tt.pattern, s, got, want)
			}
		}
	}
}

// BenchmarkCompilePatterns compiles every pattern of the table, which
// every process that judges a command does once: a shortcut that costs
// much to derive shows here (printing a class such as \S back to text
// did: 200 ms).
func BenchmarkCompilePatterns(b *testing.B) {
	var exprs []string
	for _, r := range All() {
		for _, e := range append([]string{r.Command, r.NotCommand, r.NotArgs, r.Globals, r.Env, r.Via}, r.Args...) {
			if e != "" {
				exprs = append(exprs, e)
			}
		}
	}
	for b.Loop() {
		for _, e := range exprs {
			if _, err := compilePattern(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}
