package approval

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
)

// nest wraps inner in n levels of open … close.
func nest(n int, open, close, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// backquotes nests inner in n levels of backquoted command substitution,
// escaping each level the way the shell needs: the escapes double per
// level, so a few levels fill kilobytes.
func backquotes(n int, inner string) string {
	s := inner
	for range n {
		s = "echo `" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(s) + "`"
	}
	return s
}

// fill repeats unit until the text is about size bytes long.
func fill(unit string, size int) string {
	return strings.Repeat(unit, max(1, size/len(unit)))
}

// stallShapes are commands of about size bytes built to make an analysis
// that is quadratic in their nesting or length stall, each named for its
// shape.
func stallShapes(size int) []struct{ name, cmd string } {
	quotes := 1
	for len(backquotes(quotes+1, "rm -rf /")) <= size {
		quotes++
	}
	levels := func(open, close string) int { return (size - 2) / (len(open) + len(close)) }
	return []struct{ name, cmd string }{
		{"command substitution", nest(levels("$(", ")"), "$(", ")", "ls")},
		{"command substitution as argument", nest(levels("echo $(", ")"), "echo $(", ")", "ls")},
		{"quoted command substitution", nest(levels(`"$(`, `)"`), `"$(`, `)"`, "ls")},
		{"process substitution", nest(levels("cat <(", ")"), "cat <(", ")", "ls")},
		{"subshell", nest(levels("(", ")"), "(", ")", "ls")},
		{"arithmetic", nest(levels("$((", "))"), "$((", "))", "1")},
		{"brace group", nest(levels("{ ", "; }"), "{ ", "; }", "ls")},
		{"parameter default", nest(levels("${x:-", "}"), "${x:-", "}", "ls")},
		{"if", nest(levels("if a; then ", "; fi"), "if a; then ", "; fi", "ls")},
		{"while", nest(levels("while a; do ", "; done"), "while a; do ", "; done", "ls")},
		{"case in substitution", nest(levels("$(case x in a) ", ";; esac)"), "$(case x in a) ", ";; esac)", "ls")},
		{"function", nest(levels("f() { ", "; }"), "f() { ", "; }", "ls")},
		{"backquotes", backquotes(quotes, "rm -rf /")},
		{"pipeline", fill("ls | ", size) + "ls"},
		{"pipeline into shells", fill("bash | ", size) + "bash"},
		{"and list", fill("ls && ", size) + "ls"},
		{"or list", fill("ls||", size) + "ls"},
		{"sequence", fill("ls; ", size)},
		{"brace expansion", "echo " + fill("{a,b}", size)},
		{"script written to many files", "tee " + fill("a.sh ", size/2) + "<<EOF\n" + fill("ls; ", size/2) + "\nEOF"},
		{"files made executable and written", fill("chmod +x a/./b; ", size/2) + fill("echo x > a/./b; ", size/2)},
		{"variables through variables", varChain(size) + "echo x > $v0/runbox/config.yaml"},
		{"variables with many values", fill("f=$f$f/a; ", size/2) + fill("echo x >> $f; ", size/2)},
		{"directories", fill("cd $d/x; cd ..; ", size/2) + fill("echo x > ../y; ", size/2)},
		{"paths through a loop", "for f in " + fill("~/a/$g ", size/2) + "; do " + fill("rm -rf $f/../$f; ", size/2) + "done"},
	}
}

// varChain assigns v0 through variables defined each through the next.
func varChain(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size-40; i++ {
		fmt.Fprintf(&b, "v%d=$v%d/a; ", i, i+1)
	}
	return b.String()
}

// TestGate_BoundedWork: no command of about 60 KB, however it nests or
// chains, holds a check for long, and none of them is allowed. A failure
// here means a command can stall the gate (and everything waiting on it).
// The bound is generous: it catches a hang, it does not measure speed.
func TestGate_BoundedWork(t *testing.T) {
	gates := map[string]*Gate{"default": newTestGate(t), "protected": protectedGate(t, Options{})}
	for _, s := range stallShapes(60 << 10) {
		t.Run(s.name, func(t *testing.T) {
			if n := len(s.cmd); n < 20<<10 || n > DefaultMaxCommandBytes {
				t.Fatalf("test command is %d bytes; want 20 KB to the default limit", n)
			}
			for name, g := range gates {
				start := time.Now()
				v := g.Check(t.Context(), Request{Command: s.cmd, Dir: "/home/user/project"})
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("%s gate: Check took %v", name, d)
				}
				if v.Decision == Allow {
					t.Errorf("%s gate: Check = allow; want ask or deny (rules %v)", name, v.Rules)
				}
			}
		})
	}
}

// TestGate_LimitReasons: input beyond each bound asks, and the reason says
// which bound and by how much, so a human knows why nothing was analysed.
func TestGate_LimitReasons(t *testing.T) {
	g := newTestGate(t)
	tests := []struct {
		name, cmd, reason string
	}{
		{"nesting", nest(12000, "$(", ")", "ls"), "command too deeply nested to analyse (depth 12000 > limit 100)"},
		{"nesting at the limit", nest(walk.MaxNesting, "(", ")", "ls"), ""},
		{"nesting past the limit", nest(walk.MaxNesting+1, "(", ")", "ls"), "command too deeply nested to analyse (depth 101 > limit 100)"},
		{"compound commands", nest(walk.MaxNesting+1, "if a; then ", "; fi", "ls"), "command too deeply nested to analyse (depth > limit 100)"},
		{"links", strings.Repeat("ls | ", walk.MaxCommands+1) + "ls", "command has too many parts to analyse (more than 4096)"},
		{"size", "echo " + strings.Repeat("a", DefaultMaxCommandBytes), fmt.Sprintf("command too large to analyse (%d bytes > limit %d)", DefaultMaxCommandBytes+5, DefaultMaxCommandBytes)},
		{"brace expressions", "echo " + strings.Repeat("{a,b}", shell.MaxBraceExprs+1), "word with too many brace expressions to analyse (17 > limit 16)"},
		{"code in strings", nestedShells(walk.MaxDepth + 1), "code nested in strings too deeply to analyse (more than 6 levels of bash -c, eval …)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := g.Check(t.Context(), Request{Command: tt.cmd})
			if tt.reason == "" {
				if slices.Contains(v.Rules, "too-complex") {
					t.Errorf("Check = %s %v; want no limit reached", v.Decision, v.Reasons)
				}
				return
			}
			if v.Decision != Ask || !slices.Contains(v.Rules, "too-complex") || !slices.Contains(v.Reasons, rules.RuleReason(tt.reason, "too-complex")) {
				t.Errorf("Check = %s rules=%v reasons=%q; want ask with reason %q", v.Decision, v.Rules, v.Reasons, tt.reason)
			}
		})
	}
}

func nestedShells(n int) string {
	s := "ls"
	for range n {
		s = "bash -c " + syntaxQuote(s)
	}
	return s
}

// TestGate_LimitsAskInEveryMode: a command the gate could not read through
// is not let through unread: off mode, a relaxed sandbox, a sandbox
// profile and a session approval do not allow it; unattended it is
// denied; an allow entry or an answer for the one command lets it run,
// and so does yolo, the user's choice to be asked nothing (unattended
// too: yolo asks no one).
func TestGate_LimitsAskInEveryMode(t *testing.T) {
	deep := nest(walk.MaxNesting+1, "$(", ")", "ls")
	tests := []struct {
		name string
		opts Options
		req  Request
		want Decision
	}{
		{"manual", Options{}, Request{Command: deep}, Ask},
		{"off", Options{Mode: ModeOff}, Request{Command: deep}, Ask},
		{"yolo", Options{Yolo: true}, Request{Command: deep}, Allow},
		{"yolo unattended", Options{Yolo: true}, Request{Command: deep, Unattended: true}, Allow},
		{"yolo, too large", Options{Yolo: true}, Request{Command: strings.Repeat("echo word ", 100<<10)}, Allow},
		{"too large", Options{}, Request{Command: strings.Repeat("echo word ", 100<<10)}, Ask},
		{"sandbox workspace", Options{}, Request{Command: deep, Sandbox: Sandbox{Profile: SandboxWorkspace, Writable: []string{"/w"}}, Dir: "/w"}, Ask},
		{"relaxed sandbox", Options{RelaxSandboxed: true}, Request{Command: deep, Sandboxed: true}, Ask},
		{"unattended", Options{Mode: ModeOff}, Request{Command: deep, Unattended: true}, Deny},
		{"allowed by rule id", Options{Allow: []string{"too-complex"}}, Request{Command: deep}, Allow},
		{"allowed by glob", Options{Allow: []string{"$($($(*"}}, Request{Command: deep}, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if v := g.Check(t.Context(), tt.req); v.Decision != tt.want {
				t.Errorf("Check = %s (rules %v); want %s", v.Decision, v.Rules, tt.want)
			}
		})
	}
	g := newTestGate(t)
	g.ApproveSession("s", []string{"too-complex"})
	if v := g.Check(t.Context(), Request{Command: deep, SessionKey: "s"}); v.Decision != Ask {
		t.Errorf("after a session approval Check = %s; want ask", v.Decision)
	}
}

// TestGate_DeepLineHidesNothing: a line beyond the bounds does not hide a
// hardline command on another line.
func TestGate_DeepLineHidesNothing(t *testing.T) {
	g := newTestGate(t)
	deep := nest(12000, "$(", ")", "ls")
	for _, cmd := range []string{"rm -rf /\n" + deep, deep + "\nrm -rf /", "echo ok\n" + deep + "\nsudo reboot\n"} {
		v := g.Check(t.Context(), Request{Command: cmd})
		if v.Decision != Deny || !v.Hardline || !slices.Contains(v.Rules, "too-complex") {
			t.Errorf("Check(%.20q…) = %s hardline=%v rules=%v; want a hardline deny that names the limit too", cmd, v.Decision, v.Hardline, v.Rules)
		}
	}
}

// TestScanShape_Measures: the pre-parse scan counts what nests and what
// chains, and not what quotes, comments and here-documents hold.
func TestScanShape_Measures(t *testing.T) {
	tests := []struct {
		src          string
		depth, links int
	}{
		{"ls", 0, 0},
		{"echo $(a $(b))", 2, 0},
		{"(a) && { b; }", 1, 1},
		{`echo "$(a "$(b)")"`, 4, 0},
		{"echo '((((' \"((\" \\(", 1, 0},
		{"echo $'\\'((((('", 0, 0},
		{"a # ((((((", 0, 0},
		{"echo a#(", 1, 0},
		{"a | b |& c || d && e", 0, 4},
		{"echo x >| f", 0, 0},
		{"cat <<EOF\n((((\n|||\nEOF\necho $(a)", 1, 0},
		{"cat <<-'E'\n\t((((\n\tE\n(a)", 1, 0},
		{"cat <<< '(((('", 0, 0},
		{"$(case x in a) $(case y in b) ls;; esac);; esac)", 4, 0},
		{"echo case x in a) b", 0, 0},
		{"`a \\`b\\``", 1, 0},
		{"((", 2, 0},
	}
	for _, tt := range tests {
		if got := shell.ScanShape(tt.src); got.Depth != tt.depth || got.Links != tt.links {
			t.Errorf("scanShape(%q) = depth %d links %d; want %d, %d", tt.src, got.Depth, got.Links, tt.depth, tt.links)
		}
	}
}

// BenchmarkGate_Pathological checks each of the stall shapes; ns/op is per
// command of about 60 KB.
func BenchmarkGate_Pathological(b *testing.B) {
	g, err := New(Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user"}))})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stallShapes(60 << 10) {
		b.Run(strings.ReplaceAll(s.name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(s.cmd)))
			for b.Loop() {
				g.Check(b.Context(), Request{Command: s.cmd})
			}
		})
	}
}
