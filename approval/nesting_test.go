package approval

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/walk"
)

// runners are programs that run the command that follows them, each
// spelled as it would prefix that command: every one counts toward the
// one bound on nesting (maxWrappers).
var runners = []string{
	"find . -exec ", "find . -execdir ", "find . -ok ", "find . -okdir ", "fd -x ",
	"xargs ", "env A=1 ", "nice ", "timeout 5 ", "sudo ", "command ", "nohup ", "stdbuf -oL ",
	"eval ", "watch ", "sg g ", "ssh h ", "runuser -u x ",
}

// chain puts n runners in front of tail, taking them from units in turn.
func chain(units []string, n int, tail string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(units[i%len(units)])
	}
	return b.String() + tail
}

// nestedShape is a line built to make the resolution of programs that run
// commands stall; deep says whether it nests past the bound.
type nestedShape struct {
	name, cmd string
	deep      bool
}

// nestedShapes are lines of about size bytes in which each program runs
// the next (and one in which each find runs many). Before every such
// program counted toward one bound, each level of find -exec copied and
// judged the rest of the line, and a 64 KB line of nested finds took
// seconds.
func nestedShapes(size int) []nestedShape {
	fill := func(units ...string) string {
		n := 0
		for l := 0; l < size-8; n++ {
			l += len(units[n%len(units)])
		}
		return chain(units, n-1, "ls")
	}
	return []nestedShape{
		{"find -exec", fill("find . -exec "), true},
		{"find -execdir", fill("find . -execdir "), true},
		{"find -ok", fill("find . -ok "), true},
		{"find -okdir", fill("find . -okdir "), true},
		{"fd -x", fill("fd -x "), true},
		{"xargs", fill("xargs "), true},
		{"env", fill("env A=1 "), true},
		// Each of these used to join the rest of the line and parse it
		// again, or copy it into its own record, at every level.
		{"eval", fill("eval "), true},
		{"watch", fill("watch "), true},
		{"sg", fill("sg g "), true},
		{"ssh", fill("ssh h "), true},
		{"runuser", fill("runuser -u x "), true},
		{"find -exec watch", fill("find . -exec watch "), true},
		{"every runner in turn", fill(runners...), true},
		{"find, xargs, env, nice, timeout", fill("find . -exec ", "xargs ", "env A=1 ", "nice ", "timeout 5 "), true},
		{"finds in bash -c", "bash -c " + syntaxQuote(fill("find . -exec ", "sudo ", "nice ")), true},
		// Wide, not deep: each -exec ends at its \;, so each find
		// runs two levels at most, and the line is judged in full.
		{"find with many -exec", "find . " + fill("-exec find . -exec ls \\; "), false},
	}
}

// TestGate_NestedProgramsBounded: however programs that run commands are
// nested (find -exec, -execdir, -ok, fd -x, xargs, env, nice, timeout,
// sudo, bash -c …), a line of about 60 KB is judged quickly, and one that
// nests past the bound asks (is never allowed), since the gate did not
// read through it. The bound
// is generous, to catch a stall on a loaded machine, not to measure speed;
// BenchmarkGate_NestedPrograms measures.
func TestGate_NestedProgramsBounded(t *testing.T) {
	// The protected gate also resolves the paths each find changes.
	gates := map[string]*Gate{"default": newTestGate(t), "protected": protectedGate(t, Options{})}
	for _, s := range nestedShapes(60 << 10) {
		t.Run(s.name, func(t *testing.T) {
			if n := len(s.cmd); n < 50<<10 || n > DefaultMaxCommandBytes {
				t.Fatalf("test command is %d bytes; want 50 KB to the default limit", n)
			}
			for name, g := range gates {
				start := time.Now()
				v := g.Check(t.Context(), Request{Command: s.cmd, Dir: "/home/user/project"})
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("%s gate: Check took %v; want well under a second", name, d)
				}
				if s.deep != slices.Contains(v.Reasons, rules.RuleReason(walk.TooManyWrappersDetail(walk.MaxWrappers), "too-complex")) || s.deep && v.Decision != Ask {
					t.Errorf("%s gate: Check = %s %v %q; want the nesting bound reached = %v (and then ask)", name, v.Decision, v.Rules, v.Reasons, s.deep)
				}
			}
		})
	}
}

// TestGate_NestingBoundCountsEveryProgram: the gate reads through up to
// maxWrappers programs that run commands, of any kind and in any mix, and
// finds a hardline command behind them; one more and it stops reading and
// asks. Before find -exec counted, a chain of finds of any length was read
// through (at a cost that grew with the square of its length).
func TestGate_NestingBoundCountsEveryProgram(t *testing.T) {
	g := newTestGate(t)
	tests := []struct {
		name  string
		units []string
	}{
		{"find -exec", []string{"find . -exec "}},
		{"find -execdir", []string{"find . -execdir "}},
		{"find -ok", []string{"find . -ok "}},
		{"fd -x", []string{"fd -x "}},
		{"sudo", []string{"sudo "}},
		{"eval", []string{"eval "}},
		{"ssh", []string{"ssh h "}},
		{"every runner in turn", runners},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			within := chain(tt.units, walk.MaxWrappers, "rm -rf /")
			if v := g.Check(t.Context(), Request{Command: within}); v.Decision != Deny || !v.Hardline {
				t.Errorf("%d runners: Check = %s %v; want the hardline deny of the rm behind them", walk.MaxWrappers, v.Decision, v.Rules)
			}
			past := chain(tt.units, walk.MaxWrappers+1, "rm -rf /")
			v := g.Check(t.Context(), Request{Command: past})
			if v.Decision != Ask || !slices.Equal(v.Rules, []string{"too-complex"}) || !slices.Contains(v.Reasons, rules.RuleReason(walk.TooManyWrappersDetail(walk.MaxWrappers), "too-complex")) {
				t.Errorf("%d runners: Check = %s %v %q; want ask for the nesting bound alone", walk.MaxWrappers+1, v.Decision, v.Rules, v.Reasons)
			}
		})
	}
	// Code in a string run by a shell counts too: bash -c and the
	// runners inside it share the bound.
	inner := func(n int) string { return "bash -c " + syntaxQuote(chain([]string{"find . -exec "}, n, "rm -rf /")) }
	if v := g.Check(t.Context(), Request{Command: inner(walk.MaxWrappers - 1)}); v.Decision != Deny || !v.Hardline {
		t.Errorf("bash -c and %d finds: Check = %s %v; want hardline deny", walk.MaxWrappers-1, v.Decision, v.Rules)
	}
	if v := g.Check(t.Context(), Request{Command: inner(walk.MaxWrappers)}); v.Decision != Ask || !slices.Contains(v.Reasons, rules.RuleReason(walk.TooManyWrappersDetail(walk.MaxWrappers), "too-complex")) {
		t.Errorf("bash -c and %d finds: Check = %s %v %q; want ask for the nesting bound", walk.MaxWrappers, v.Decision, v.Rules, v.Reasons)
	}
}

// TestGate_HardlineBeforeNestingBound: what the gate reads before the
// bound still counts: a hardline command there is denied, however deep
// the rest of the line goes.
func TestGate_HardlineBeforeNestingBound(t *testing.T) {
	g := newTestGate(t)
	deep := chain([]string{"find . -exec "}, 5000, "ls")
	for _, cmd := range []string{
		"find / -delete -exec " + deep,
		"sudo find ~ -exec rm -rf {} ; -exec " + deep,
		"rm -rf / ; " + deep,
		deep + " ; rm -rf /",
		"timeout 5 " + chain(runners, 3*walk.MaxWrappers, "ls") + "\nsudo reboot",
	} {
		v := g.Check(t.Context(), Request{Command: cmd})
		if v.Decision != Deny || !v.Hardline {
			t.Errorf("Check(%.40q…) = %s hardline=%v rules=%v; want hardline deny", cmd, v.Decision, v.Hardline, v.Rules)
		}
	}
}

// BenchmarkGate_NestedPrograms checks each nested shape; ns/op is per
// line of about 60 KB.
func BenchmarkGate_NestedPrograms(b *testing.B) {
	g, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range nestedShapes(60 << 10) {
		b.Run(strings.ReplaceAll(s.name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(s.cmd)))
			for b.Loop() {
				g.Check(b.Context(), Request{Command: s.cmd})
			}
		})
	}
}

// TestGate_CodeRunnersReadWordsBack: eval, watch, sg and ssh HOST join
// their words and hand them to a shell. Words the shell reads back as
// themselves are resolved in place, like a wrapper's command line; any
// other word (a quote, a separator, an expansion, a keyword) still makes
// the joined text parsed as code, so what the shell would see in it is
// judged.
func TestGate_CodeRunnersReadWordsBack(t *testing.T) {
	g := newTestGate(t)
	tests := []struct {
		cmd      string
		hardline bool
	}{
		{"eval rm -rf /", true},
		{"eval sudo rm -rf /", true},
		{"watch -n 5 rm -rf /", true},
		{"sg wheel rm -rf /", true},
		{"ssh host rm -rf /", true},
		{"eval echo 'x; rm -rf /'", true},
		{"eval echo 'x;' rm -rf /", true},
		{"watch echo 'x && reboot'", true},
		{"sg wheel echo 'x; rm -rf /'", true},
		{"ssh host echo 'x; rm -rf /'", true},
		{`eval "$(echo rm) -rf /"`, false},
		{"eval if true';' then rm -rf /';' fi", true},
		{"eval nice eval A=1 rm -rf /", true},
		{"watch env A=1 watch A=1 rm -rf /", true},
		{"eval A=1 rm -rf /", true},
		{"eval -- rm -rf /", true},
		{"eval -- 'rm -rf /'", true},
		{"eval echo rm -rf /", false},
		{"ssh host echo rm -rf /", false},
	}
	for _, tt := range tests {
		v := g.Check(t.Context(), Request{Command: tt.cmd})
		if v.Hardline != tt.hardline || v.Decision == Allow && tt.hardline {
			t.Errorf("Check(%q) = %s hardline=%v rules=%v; want hardline=%v", tt.cmd, v.Decision, v.Hardline, v.Rules, tt.hardline)
		}
	}
}

// syntaxQuote single-quotes s for the shell.
func syntaxQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
