package walk

import (
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval/internal/rules"
)

// TestAnalyze_FindsEveryCommand: every place a simple command can stand is
// visited, and wrappers resolve to the program they run.
func TestAnalyze_FindsEveryCommand(t *testing.T) {
	tests := []struct {
		src  string
		want []string // program names that must be found
	}{
		{"a; b && c || d | e", []string{"a", "b", "c", "d", "e"}},
		{"(a) && { b; }", []string{"a", "b"}},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}},
		{"for x in 1; do a; done; while b; do c; done; until d; do e; done", []string{"a", "b", "c", "d", "e"}},
		{"case x in y) a;; esac", []string{"a"}},
		{"f() { a; }", []string{"a"}},
		{"echo $(a) `b` <(c) >(d)", []string{"a", "b", "c", "d"}},
		{"x=$(a) y", []string{"a", "y"}},
		{"export X=$(a)", []string{"a"}},
		{"[[ $(a) ]]", []string{"a"}},
		{"sudo -u x env A=1 nice -n 5 timeout 3 /usr/bin/a", []string{"sudo", "a"}},
		{"bash -c 'a; b'", []string{"bash", "a", "b"}},
		{"xargs -n1 a", []string{"a"}},
		{"find . -exec a {} \\;", []string{"find", "a"}},
		{"python -m pip list", []string{"pip"}},
		{"A.EXE", []string{"a"}},
	}
	for _, tt := range tests {
		var got []string
		for _, c := range Analyze(tt.src) {
			got = append(got, c.Name)
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("analyze(%q) = %v; missing %q", tt.src, got, w)
			}
		}
	}
}

// TestAnalyze_Bounded: input that explodes is cut off with a fact, not
// walked forever.
func TestAnalyze_Bounded(t *testing.T) {
	src := strings.Repeat("a;", MaxCommands+10)
	cmds := Analyze(src)
	if len(cmds) > MaxCommands+1 || cmds[len(cmds)-1].Name != rules.FactTooComplex {
		t.Errorf("analyze of %d commands returned %d, last %q; want the bound and %s", MaxCommands+10, len(cmds), cmds[len(cmds)-1].Name, rules.FactTooComplex)
	}
	nested := "ls"
	for range MaxDepth + 2 {
		nested = "bash -c " + syntaxQuote(nested)
	}
	if !slices.ContainsFunc(Analyze(nested), func(c rules.Command) bool { return c.Name == rules.FactTooDeep }) {
		t.Errorf("analyze of deep nesting has no %s fact", rules.FactTooDeep)
	}
}

func syntaxQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
