package approval

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
)

// TestRuleIndex_SameVerdictsAsFullScan holds the rule index to the full
// scan it replaces: over the shared corpus, the fuzz seeds and the fuzz
// corpus, and thousands of generated commands, a gate that tests each
// command against its indexed rules and one that tests every rule give
// identical verdicts (decision, reasons and rules, in order), and
// identical findings command by command. A rule filed under too few
// names, or a list out of table order, fails here.
func TestRuleIndex_SameVerdictsAsFullScan(t *testing.T) {
	opts := Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user", "XDG_STATE_HOME": "/home/user/.state"}))}
	indexed, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	full, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	full.fullScan = true
	table, _ := rules.Table()
	ix, _ := rules.TableIndex()

	inputs := append(differentialInputs(t), generatedCommands(rand.New(rand.NewPCG(1, 2)), 3000)...)
	flagged := 0
	for _, cmd := range inputs {
		for _, dir := range []string{"", "/home/user/.config"} {
			req := Request{Command: cmd, Dir: dir}
			v, w := indexed.Check(t.Context(), req), full.Check(t.Context(), req)
			if !reflect.DeepEqual(v, w) {
				t.Errorf("Check(%q, dir %q):\n  indexed   %+v\n  full scan %+v", cmd, dir, v, w)
			}
			if v.Decision != Allow {
				flagged++
			}
		}
		cmds := walk.Analyze(shell.Normalize(cmd))
		if got, want := ix.Judge(cmds), rules.Judge(table, cmds); !slices.Equal(got, want) {
			t.Errorf("findings for %q: indexed %v, full scan %v", cmd, findingIDs(got), findingIDs(want))
		}
	}
	// The inputs must exercise the rules, not only harmless commands.
	if flagged < len(inputs)/4 {
		t.Errorf("only %d of %d checks flagged anything; the inputs do not exercise the rules", flagged, 2*len(inputs))
	}
}

// TestRuleIndex_CandidatesCoverNameMatches: for every rule and many names
// (every name the index knows, program names, generated and odd ones),
// a rule whose name tests let a name through is among that name's
// candidates, and candidates are in table order.
func TestRuleIndex_CandidatesCoverNameMatches(t *testing.T) {
	table, _ := rules.Table()
	ix, _ := rules.TableIndex()
	pos := make(map[*rules.Compiled]int)
	for i, r := range table {
		pos[r] = i
	}
	names := slices.Collect(maps.Keys(ix.ByName))
	names = append(names, walk.ProgramNames()...)
	names = append(names, "", "@", "@writes", "mkfs.ext4", "mkfs_x", "newfs_msdos", "pip3.12", "pipx", "PIP", "ls", "x",
		"\xff", "é", "ｒｍ", "@too-deep", "@too-complexity", "rm ", " rm", "1", "-", "[", ":")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		names = append(names, string(b))
	}
	for _, n := range slices.Clone(names) {
		names = append(names, strings.ToUpper(n), n+"x", "x"+n, n[:len(n)/2])
	}
	for _, n := range names {
		cands := ix.Candidates(n)
		if !slices.IsSortedFunc(cands, func(a, b *rules.Compiled) int { return pos[a] - pos[b] }) {
			t.Errorf("candidates(%q) are not in table order", n)
		}
		for _, r := range table {
			if r.NameMatches(n) && !slices.Contains(cands, r) {
				t.Errorf("rule %s lets %q through but is not among its candidates", r.ID, n)
			}
		}
	}
}

// TestRuleIndex_SkipsRules: the index is worth having: a plain command
// is tested against a small part of the table.
func TestRuleIndex_SkipsRules(t *testing.T) {
	table, _ := rules.Table()
	ix, _ := rules.TableIndex()
	for _, name := range []string{"ls", "go", "git", "npm", "echo", "rm"} {
		if n := len(ix.Candidates(name)); n*4 > len(table) {
			t.Errorf("%s has %d candidate rules of %d", name, n, len(table))
		}
	}
}

// TestPattern_SameAsRegexp: the text a pattern requires only ever skips
// its expression where the expression does not match: over every line the
// rules see for the differential inputs, and lines built from the rules'
// own required strings, a pattern answers as its regexp does.
func TestPattern_SameAsRegexp(t *testing.T) {
	table, _ := rules.Table()
	// The lines each kind of pattern is tested on: names, argument lines,
	// global options, environments, wrappers.
	const (
		names = iota
		args
		globals
		env
		via
		kinds
	)
	var lines [kinds][]string
	inputs := append(differentialInputs(t), generatedCommands(rand.New(rand.NewPCG(5, 6)), 300)...)
	for _, cmd := range inputs {
		for _, c := range walk.Analyze(shell.Normalize(cmd)) {
			lines[names] = append(lines[names], c.Name)
			lines[args] = append(lines[args], shell.Line(c.Args, !strings.HasPrefix(c.Name, "@")))
			lines[globals] = append(lines[globals], shell.Line(c.Globals, true))
			lines[env] = append(lines[env], strings.Join(c.Env, " "))
			lines[via] = append(lines[via], strings.Join(c.Via, " "))
		}
	}
	for k := range lines {
		slices.Sort(lines[k])
		lines[k] = slices.Compact(lines[k])
	}
	uses := make(map[*rules.Pattern][]int)
	use := func(p *rules.Pattern, kind int) {
		if p != nil && !slices.Contains(uses[p], kind) {
			uses[p] = append(uses[p], kind)
		}
	}
	for _, r := range table {
		use(r.CommandRE, names)
		use(r.NotCommandRE, names)
		use(r.NotArgsRE, args)
		use(r.GlobalsRE, globals)
		use(r.EnvRE, env)
		use(r.ViaRE, via)
		for _, p := range r.ArgsRE {
			use(p, args)
		}
	}
	for p, kinds := range uses {
		p.Derive()
		var own []string
		for _, k := range kinds {
			own = append(own, lines[k]...)
		}
		// Lines that hold what p requires, or are near what it matches
		// whole, are where a wrong list would show.
		for _, n := range append(slices.Clone(p.Needs), slices.Collect(maps.Keys(p.Whole))...) {
			own = append(own, n, " "+n+" ", "-"+n, n+"/", "x"+n+"=1", strings.ToUpper(n), n+"\n", "\xff"+n, n[:len(n)/2])
		}
		for _, l := range own {
			if got, want := p.MatchString(l), p.Regexp().MatchString(l); got != want {
				t.Errorf("pattern %q on %q: %v, its regexp says %v (needs %q)", p, l, got, want, p.Needs)
			}
		}
	}
}

// differentialInputs are the commands the differential tests start from:
// the shared corpus when it is present, the fuzz seeds and the fuzz
// corpus in testdata.
func differentialInputs(t *testing.T) []string {
	t.Helper()
	inputs := fuzzSeeds()
	if b, err := os.ReadFile("../../shared/approval/corpus.json"); err == nil {
		var corpus struct{ Cases []struct{ Cmd string } }
		if err := json.Unmarshal(b, &corpus); err != nil {
			t.Fatal(err)
		}
		for _, c := range corpus.Cases {
			inputs = append(inputs, c.Cmd)
		}
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzGate/*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1, then string("…") on the next line.
		for l := range strings.Lines(string(b)) {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "string("); ok {
				var v string
				if err := json.Unmarshal([]byte(strings.TrimSuffix(s, ")")), &v); err == nil {
					inputs = append(inputs, v)
				}
			}
		}
	}
	return inputs
}

// generatedCommands builds n commands from the names the rules know and
// the words of their examples, wrapped, combined and misspelt at random,
// so that most of them reach some rule and some reach many.
func generatedCommands(rng *rand.Rand, n int) []string {
	ix, _ := rules.TableIndex()
	var names []string
	for name := range ix.ByName {
		if !strings.HasPrefix(name, "@") {
			names = append(names, name)
		}
	}
	names = append(names, walk.ProgramNames()...)
	names = append(names, "ls", "go", "make", "mkfs.ext4", "pip3", "newfs_hfs", "$CMD", "/usr/bin/rm", `\rm`, "'git'", "RM", "ｒｍ")
	slices.Sort(names)
	var words []string
	for _, r := range rules.All() {
		for _, ex := range append(r.Match, r.NoMatch...) {
			words = append(words, strings.Fields(ex)...)
		}
	}
	words = append(words, "/", "~", "-rf", "--force", "/etc", "/dev/sda", "169.254.169.254", "push", "reset", "--hard", "-9", "1")
	slices.Sort(words)
	prefixes := []string{"", "", "", "sudo ", "env A=1 ", "DOCKER_HOST=tcp://x ", "xargs ", "nohup ", "time ", "command "}
	joins := []string{" && ", " | ", "; ", " || ", " > /etc/passwd; ", "\n"}
	simple := func() string {
		s := prefixes[rng.IntN(len(prefixes))] + names[rng.IntN(len(names))]
		for range rng.IntN(5) {
			s += " " + words[rng.IntN(len(words))]
		}
		return s
	}
	out := make([]string, 0, n)
	for range n {
		s := simple()
		switch rng.IntN(6) {
		case 0:
			s += joins[rng.IntN(len(joins))] + simple()
		case 1:
			s = "bash -c " + strings.ReplaceAll(`'`+s+`'`, "\n", " ")
		case 2:
			s = "echo " + s // prose
		}
		out = append(out, s)
	}
	return out
}

func findingIDs(fs []rules.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule.ID+":"+f.Cmd.Name)
	}
	return out
}

// inside runbox.
func BenchmarkGate_Mixed(b *testing.B) {
	cmds := SampleCommands()
	for _, r := range rules.All() {
		cmds = append(cmds, r.Match...)
		cmds = append(cmds, r.NoMatch...)
	}
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{}},
		{"protected", Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user"}))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g, err := New(bc.opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			i := 0
			for b.Loop() {
				g.Check(ctx, Request{Command: cmds[i%len(cmds)], Dir: "/home/user/project"})
				i++
			}
		})
	}
}

// TestGate_ReusedAnalyzersKeepNoState: a Gate reuses its analyzers from
// one check to the next; nothing of one command may reach the verdict on
// another. Verdicts from one long-lived gate, checking commands in turn
// and from several goroutines at once, equal those of a new gate for each
// command.
func TestGate_ReusedAnalyzersKeepNoState(t *testing.T) {
	opts := Options{Protect: DefaultProtection(testEnv(map[string]string{"HOME": "/home/user"}))}
	inputs := append(differentialInputs(t), generatedCommands(rand.New(rand.NewPCG(11, 12)), 500)...)
	// Directories vary from check to check: the guard a check reuses
	// must not keep the last one's.
	dirs := []string{"/home/user/p", "/home/user/.config/runbox", "", "/", "/home/user/p"}
	want := make([]Verdict, len(inputs))
	for i, cmd := range inputs {
		g, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = g.Check(t.Context(), Request{Command: cmd, Dir: dirs[i%len(dirs)]})
	}
	shared, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	check := func(i int) {
		if got := shared.Check(t.Context(), Request{Command: inputs[i], Dir: dirs[i%len(dirs)]}); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("Check(%q) on a reused gate = %+v; a new gate says %+v", inputs[i], got, want[i])
		}
	}
	for i := range inputs {
		check(i)
	}
	for i := len(inputs) - 1; i >= 0; i-- {
		check(i)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(inputs); i += 4 {
				check(i)
			}
		})
	}
	wg.Wait()
}
