package approval

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/walk"
)

// FuzzGate: Check never panics, stays fast, and its verdict does not move
// when the command is respaced or a plain word is quoted, which cannot
// change what a shell runs.
func FuzzGate(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	g, err := New(Options{Protect: DefaultProtection(func(k string) string {
		return map[string]string{"HOME": "/home/user", "XDG_STATE_HOME": "/home/user/.state"}[k]
	})})
	if err != nil {
		f.Fatal(err)
	}
	// The same gate testing every rule, to hold the index to it.
	full, err := New(g.opts)
	if err != nil {
		f.Fatal(err)
	}
	full.fullScan = true
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 4096 {
			return
		}
		start := time.Now()
		v := g.Check(t.Context(), Request{Command: cmd, Dir: "/home/user/project"})
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Check(%q) took %v", cmd, d)
		}
		if v.Decision < Allow || v.Decision > Deny || v.Hardline && v.Decision != Deny {
			t.Fatalf("Check(%q) = %+v: invalid verdict", cmd, v)
		}
		if w := full.Check(t.Context(), Request{Command: cmd, Dir: "/home/user/project"}); !reflect.DeepEqual(v, w) {
			t.Fatalf("Check(%q) = %+v with the rule index, %+v testing every rule", cmd, v, w)
		}
		// Harmless rewrites: only for inputs made of plain words, where
		// the rewrite provably keeps the meaning.
		fields := strings.Fields(cmd)
		if len(fields) == 0 || strings.ContainsAny(cmd, "'\"\\$`(){}[]<>|&;#*?~=!") || !plainText(cmd) {
			return
		}
		for _, f := range fields {
			// Quoting a reserved word changes what it is.
			if strings.Contains(f, "IFS") || reservedWords[f] {
				return
			}
		}
		respaced := strings.Join(fields, "   ")
		quoted := make([]string, len(fields))
		for i, f := range fields {
			quoted[i] = "'" + f + "'"
		}
		for _, alt := range []string{respaced, strings.Join(quoted, " "), " " + cmd + " "} {
			w := g.Check(t.Context(), Request{Command: alt, Dir: "/home/user/project"})
			if w.Decision != v.Decision || w.Hardline != v.Hardline {
				t.Fatalf("Check(%q) = %s/%v but Check(%q) = %s/%v", cmd, v.Decision, v.Hardline, alt, w.Decision, w.Hardline)
			}
		}
	})
}

// fuzzSeeds are FuzzGate's seed inputs: every rule's examples, the
// sample of agent commands, shapes at the bounds of the analysis and
// commands that write to protected paths.
func fuzzSeeds() []string {
	var seeds []string
	for _, r := range rules.All() {
		seeds = append(seeds, r.Match...)
		seeds = append(seeds, r.NoMatch...)
	}
	seeds = append(seeds, SampleCommands()...)
	// Deep and long shapes, small enough for the fuzzer to mutate.
	for _, s := range stallShapes(4000) {
		seeds = append(seeds, s.cmd)
	}
	seeds = append(seeds, nest(walk.MaxNesting, "(", ")", "ls"), nest(walk.MaxNesting+1, "$(", ")", "ls"),
		"cat <<EOF\n((((\nEOF\n$(ls)", "$(case x in a) ls;; esac)", "echo {a,b}{c,d}{e,f}")
	// The red-team lines: every family of harm in the spellings an
	// attacker would use, and the ordinary commands beside them.
	if rt, err := loadRedTeam(redTeamFile); err == nil {
		for _, fam := range rt.families {
			seeds = append(seeds, rt.destructive[fam]...)
		}
		seeds = append(seeds, rt.safe...)
	}
	// Protected paths make the gate resolve every path a command writes;
	// the fuzzer drives that too.
	seeds = append(seeds, "f=~/.config/runbox/config.yaml; echo x >> $f", "cd ~/.config && cd runbox && rm config.yaml",
		`echo x >> "${XDG_CONFIG_HOME:-$HOME/.config}/runbox/config.yaml"`, "ln -s ~/.config/runbox /tmp/r; echo > /tmp/r/x",
		"for f in a $f ~/b; do cd $f/..; echo > ../$f; done", "tar -C ~/.config -xf x.tar --file=$X")
	return seeds
}

// BenchmarkGate checks the mixed sample of real agent commands; ns/op is
// per command.
func BenchmarkGate(b *testing.B) {
	g, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	cmds := SampleCommands()
	ctx := b.Context()
	i := 0
	for b.Loop() {
		g.Check(ctx, Request{Command: cmds[i%len(cmds)]})
		i++
	}
}

// plainText reports whether s is printable ASCII, spaces and tabs only.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// reservedWords change what they are when quoted, for bash or for the
// parser the gate uses: bash's reserved words, and the builtins the parser
// reads as clauses of their own ("let" alone does not parse; "'let'" is a
// command).
var reservedWords = setOf(`if then else elif fi case esac for select while until do done in function time coproc
let declare local export readonly typeset nameref`)
