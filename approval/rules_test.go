package approval

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
)

// TestRules_OwnExamples runs every rule's Match and NoMatch examples
// through a default Gate. A rule whose pattern drifts from its examples
// fails here, naming the rule.
func TestRules_OwnExamples(t *testing.T) {
	g, err := New(Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user"}))})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules.All() {
		if len(r.Match) == 0 {
			t.Errorf("rule %s has no Match examples", r.ID)
		}
		for _, cmd := range r.Match {
			v := g.Check(t.Context(), Request{Command: cmd})
			if !slices.Contains(v.Rules, r.ID) {
				t.Errorf("rule %s: Check(%q) rules = %v; want it to match", r.ID, cmd, v.Rules)
			}
		}
		for _, cmd := range r.NoMatch {
			v := g.Check(t.Context(), Request{Command: cmd})
			if slices.Contains(v.Rules, r.ID) {
				t.Errorf("rule %s: Check(%q) rules = %v; want it not to match", r.ID, cmd, v.Rules)
			}
		}
	}
}

// TestRules_TableCompiles protects the table's invariants: unique ids,
// valid tiers and patterns, a description for every rule.
func TestRules_TableCompiles(t *testing.T) {
	table, err := rules.Table()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range table {
		if r.Description == "" {
			t.Errorf("rule %s has no description", r.ID)
		}
		for n := range r.Names {
			names = append(names, n)
		}
	}
	// The name sets that stand in for simple Command patterns must agree
	// with the patterns.
	names = append(names, "", "x", "rmdir", "@writes", "chmodx")
	for _, r := range table {
		if r.Names == nil {
			continue
		}
		for _, n := range names {
			if r.Names[n] != r.CommandRE.MatchString(n) {
				t.Errorf("rule %s: name set says %v for %q, pattern %q says %v", r.ID, r.Names[n], n, r.Command, !r.Names[n])
			}
		}
	}
}

// testEnv is a getenv over m.
func testEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestRules_WholeWordNames: a program is matched by its whole name. For
// every rule about a program, each of its own Match examples is run again
// with the program renamed to a longer name that merely begins (or ends)
// with it — mkfs_helper, rebooter, shutdown-notifier, xrm — and the rule
// must not match the renamed program.
func TestRules_WholeWordNames(t *testing.T) {
	g, err := New(Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user"}))})
	if err != nil {
		t.Fatal(err)
	}
	table, err := rules.Table()
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`[A-Za-z0-9_.-]+`)
	renames := []func(string) string{
		func(n string) string { return n + "_helper" },
		func(n string) string { return n + "-notifier" },
		func(n string) string { return "x" + n },
		func(n string) string {
			if strings.Contains(n, ".") {
				return n + "_x"
			}
			return n + "er"
		},
	}
	tested := 0
	for _, r := range table {
		if r.CommandRE == nil || strings.HasPrefix(r.Command, "^@") || r.CommandRE.MatchString("zzz-unrelated") {
			continue
		}
		for _, ex := range r.Match {
			for _, rename := range renames {
				renamed := word.ReplaceAllStringFunc(ex, func(w string) string {
					if r.CommandRE.MatchString(shell.CanonicalName(w)) {
						return strings.TrimSuffix(w, shell.CanonicalName(w)) + rename(shell.CanonicalName(w))
					}
					return w
				})
				if renamed == ex {
					continue // the name is spelled in a way the words above do not show (r''m)
				}
				tested++
				if v := g.Check(t.Context(), Request{Command: renamed}); slices.Contains(v.Rules, r.ID) {
					t.Errorf("rule %s matches %q (renamed from %q); want only the whole program name to match", r.ID, renamed, ex)
				}
			}
		}
	}
	if tested < 200 {
		t.Errorf("only %d renamed examples were checked; the test lost its reach", tested)
	}
}
