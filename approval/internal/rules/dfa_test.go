package rules

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"testing"
)

// TestDFA_Edges holds the dfa to the regexp package on the edges of what
// it follows: anchors alone and together, empty lines, matches of the
// empty string, case folding, any character, and lines it leaves to the
// regexp (a byte from 0x80 up).
func TestDFA_Edges(t *testing.T) {
	exprs := []string{
		`^$`, `^`, `$`, ``, `a*`, `^a*$`, `^ab$`, `ab`, `a|^b`, `a$|b`, `(^| )-f( |$)`, `(^|x)$`,
		`(?i)kill`, `(?i)^[a-z]+$`, `(?i)(^| )(-9|-kill|-sigkill)( |$)`, `a.b`, `(?s)a.b`, `[^a]`,
		`(a|ab)(c|bcd)(d*)`, `x{2,3}y`, `^(-\S+ )*(push|publish)( |$)`, `\.env(\.[A-Za-z0-9_-]+)*$`,
		`^$|^(ps|images)( |$)`, `(^|[^i] |[^-\s]i )([^ ]*[=@:/])?\.ssh/id_[A-Za-z0-9_-]+`,
	}
	lines := []string{"", " ", "a", "b", "ab", "aab", "abc", "abcd", "ba", "-f", "x -f", "-f y", "x-f", "x", "xx", "xxy",
		"KILL", "-Kill", "a -SIGKILL b", "a\nb", "a\tb", "axb", "push", "-v push x", "-v publish", ".env", "x.env.local",
		"a.env.x/y", "ps", "images ls", "cp ~/.ssh/id_rsa x", "-i ~/.ssh/id_ed25519", "i ~/.ssh/id_rsa",
		"é", "a\xffb", "\x00", "ab\x7f"}
	for _, expr := range exprs {
		d := newDFA(expr)
		if d == nil {
			t.Fatalf("%q: no dfa", expr)
		}
		re := regexp.MustCompile(expr)
		for _, s := range lines {
			got, ok := d.matchString(s)
			if !ok {
				if strings.IndexFunc(s, func(r rune) bool { return r >= 0x80 }) < 0 {
					t.Errorf("%q on %q: the dfa did not answer an ASCII line", expr, s)
				}
				continue
			}
			if want := re.MatchString(s); got != want {
				t.Errorf("%q on %q: dfa %v, regexp %v", expr, s, got, want)
			}
		}
	}
}

// TestDFA_OtherAssertions: an expression with an assertion the dfa does
// not follow gets none, and its pattern still answers as its regexp.
func TestDFA_OtherAssertions(t *testing.T) {
	for _, expr := range []string{`\bkill\b`, `\Bx`, `(?m)^x$`, `(?m)x$`} {
		if newDFA(expr) != nil {
			t.Errorf("%q has a dfa", expr)
		}
		re, _ := syntax.Parse(expr, syntax.Perl)
		if dfaFollows(re.Simplify()) {
			t.Errorf("dfaFollows(%q) = true", expr)
		}
		p, err := compilePattern(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"kill", "skill", "a\nx", "x"} {
			if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
				t.Errorf("%q on %q: %v, its regexp says %v", expr, s, got, want)
			}
		}
	}
}

// TestDFA_RuleTableOnRuleLines runs every expression of the rule table
// over every example line of every rule and over lines made of their
// words shuffled, with room for few states so that the dfa is dropped
// and built again many times: its answers are the regexp's, or none.
func TestDFA_RuleTableOnRuleLines(t *testing.T) {
	var exprs, lines []string
	var words []string
	for _, r := range All() {
		for _, e := range append([]string{r.Command, r.NotCommand, r.NotArgs, r.Globals, r.Env, r.Via}, r.Args...) {
			if e != "" {
				exprs = append(exprs, e)
			}
		}
		for _, s := range append(append([]string{}, r.Match...), r.NoMatch...) {
			lines = append(lines, s)
			words = append(words, strings.Fields(s)...)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// A sample of the examples keeps the test short: the oracle runs
	// every expression over every line.
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	lines = lines[:min(len(lines), 500)]
	for range 150 {
		n := 1 + rng.IntN(6)
		w := make([]string, n)
		for i := range w {
			w[i] = words[rng.IntN(len(words))]
		}
		lines = append(lines, strings.Join(w, " "))
	}
	answered, unanswered := 0, 0
	for _, expr := range exprs {
		d := newDFA(expr)
		if d == nil {
			continue
		}
		d.max = 3 + rng.IntN(12)
		re := regexp.MustCompile(expr)
		for _, s := range lines {
			got, ok := d.matchString(s)
			if !ok {
				unanswered++
				continue
			}
			answered++
			if got != re.MatchString(s) {
				t.Fatalf("%q on %q: dfa %v, regexp %v", expr, s, got, !got)
			}
		}
	}
	// Both paths ran: answers from states built anew after a drop.
	if answered == 0 || unanswered == 0 {
		t.Fatalf("answered %d lines, left %d to the regexp; want some of each", answered, unanswered)
	}
	t.Logf("answered %d lines, left %d to the regexp", answered, unanswered)
}

// TestDFA_Concurrent: one pattern answers many goroutines at once while
// its states are built (go test -race checks the sharing).
func TestDFA_Concurrent(t *testing.T) {
	p, err := compilePattern(`(^| )(push|publish|upload)( |$)|--force`)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"git push", "npm publish --tag x", "twine upload dist/*", "git status", "x --force", "pushd", ""}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				s := lines[(g+i)%len(lines)]
				if got, want := p.MatchString(s), p.Regexp().MatchString(s); got != want {
					t.Errorf("%q: %v, its regexp says %v", s, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkDFA compares a rule expression run by the dfa with the same
// run by the regexp package, over the lines of the rules' examples.
func BenchmarkDFA(b *testing.B) {
	expr := `(^| )(/|/(bin|boot|dev|etc|lib|lib32|lib64|libx32|proc|sbin|sys|usr|var)|/home/[^/ ]+)( |$)`
	var lines []string
	for _, r := range All() {
		lines = append(lines, r.Match...)
	}
	b.Run("dfa", func(b *testing.B) {
		d := newDFA(expr)
		i := 0
		for b.Loop() {
			d.matchString(lines[i%len(lines)])
			i++
		}
	})
	b.Run("regexp", func(b *testing.B) {
		re := regexp.MustCompile(expr)
		i := 0
		for b.Loop() {
			re.MatchString(lines[i%len(lines)])
			i++
		}
	})
}
