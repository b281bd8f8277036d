package approval

import (
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// TestGate_Input: a command's piped input is read as commands only where
// a program in it reads its input as commands; as code where an
// interpreter with no script does; and as data everywhere else.
func TestGate_Input(t *testing.T) {
	g := newTestGate(t)
	tests := []struct {
		cmd     string
		kind    InputKind
		program string
	}{
		{"wc -c", InputData, ""},
		{"wc -l", InputData, ""},
		{"jq .a", InputData, ""},
		{"grep -v x | sort | uniq -c", InputData, ""},
		{"python3 script.py", InputData, ""},
		{"python3 -m json.tool", InputData, ""},
		{"python3 -c 'import sys; print(sys.stdin.read())'", InputData, ""},
		{"node app.js", InputData, ""},
		{"bash script.sh", InputData, ""},
		{"bash -c 'wc -l'", InputData, ""},
		{"cat > out.txt", InputData, ""},
		{"tee log", InputData, ""},

		{"bash", InputCommands, "bash"},
		{"sh -s", InputCommands, "sh"},
		{"bash -s -- arg", InputCommands, "bash"},
		{"sudo bash", InputCommands, "bash"},
		{"env FOO=1 sh", InputCommands, "sh"},
		{"timeout 5 zsh", InputCommands, "zsh"},
		{"cd src && bash", InputCommands, "bash"},
		{"ssh host", InputCommands, "ssh"},
		{"source /dev/stdin", InputCommands, "source"},
		{"bash -c 'bash'", InputCommands, "bash"},
		{"crontab -", InputCommands, "crontab"},
		{"cat | bash", InputCommands, "bash"}, // cat passes it on
		{"bash < script.sh", InputData, ""},
		{"bash <<'EOF'\necho hi\nEOF", InputData, ""},
		{"{ bash; } < /dev/null", InputData, ""},
		{"bash; python3", InputCommands, "bash"},
		{"python3; bash", InputCommands, "bash"},

		{"python3", InputCode, "python3"},
		{"python3 -", InputCode, "python3"},
		{"python3 -u", InputCode, "python3"},
		{"node", InputCode, "node"},
		{"ruby", InputCode, "ruby"},
		{"perl", InputCode, "perl"},
		{"php", InputCode, "php"},
		{"cd x && python3", InputCode, "python3"},

		{"psql -d app", InputStatements, "psql"},
		{"sqlite3 db.sqlite", InputStatements, "sqlite3"},
		{"redis-cli", InputStatements, "redis-cli"},
		{"chpasswd", InputStatements, "chpasswd"},
	}
	for _, tt := range tests {
		in := g.Input(tt.cmd)
		if in.Kind != tt.kind || in.Program != tt.program {
			t.Errorf("Input(%q) = %s %q; want %s %q", tt.cmd, in.Kind, in.Program, tt.kind, tt.program)
		}
	}
	if in := g.Input(strings.Repeat("echo x; ", 20<<10)); in.Kind != InputCommands {
		t.Errorf("Input of a command too large to analyse = %s; want commands (judged, not passed)", in.Kind)
	}
}

// TestGate_CheckInput: input is judged the way its reader takes it: a
// shell's as commands, an interpreter's as inline code of its language
// (allowed where a sandbox confines it, as inline code is), a client's as
// its statements; JSON a shell would not parse is no question for wc,
// which never reaches the gate.
func TestGate_CheckInput(t *testing.T) {
	g := newSandboxGate(t)
	bash, python, psql := g.Input("bash"), g.Input("python3"), g.Input("psql")
	tests := []struct {
		name string
		in   Input
		text string
		sb   SandboxProfile
		want Decision
		rule string
	}{
		{"shell: safe", bash, "echo hi\nls -la\n", "", Allow, ""},
		{"shell: hardline", bash, "rm -rf /\n", "", Deny, "rm-root"},
		{"shell: multi-line construct", bash, "if true; then\n  echo hi\nfi\n", "", Allow, ""},
		{"shell: sandbox relaxes in the workspace", bash, "rm -rf build\n", SandboxWorkspace, Allow, ""},
		{"shell: sandbox refuses outside", bash, "rm -rf ~/x\n", SandboxWorkspace, Deny, ""},
		{"code: no sandbox asks", python, "import os\nos.system('id')\n", "", Ask, "inline-code"},
		{"code: off asks", python, "import subprocess\nsubprocess.run(['id'])\n", SandboxOff, Ask, "inline-code"},
		{"code: plainly read-only runs", python, "print(6*7)\n", "", Allow, ""},
		{"code: workspace runs it like a script", python, "print(6*7)\n", SandboxWorkspace, Allow, ""},
		{"code: read-only runs it like a script", python, "import os\nos.system('rm -rf ~')\n", SandboxReadOnly, Allow, ""},
		{"code: not parsed as shell", python, `{"a": (1)}`, SandboxWorkspace, Allow, ""},
		{"code: any size", python, strings.Repeat("x = 1\n", 100<<10), SandboxWorkspace, Allow, ""},
		{"statements: SQL drop", psql, "DROP TABLE users;\n", "", Ask, ""},
		{"statements: select", psql, "SELECT 1;\n", "", Allow, ""},
	}
	for _, tt := range tests {
		req := sbRequest(tt.text, tt.sb)
		req.Input = tt.in
		v := g.Check(t.Context(), req)
		if v.Decision != tt.want || tt.rule != "" && !slices.Contains(v.Rules, tt.rule) {
			t.Errorf("%s: Check = %s %v %q; want %s %s", tt.name, v.Decision, v.Rules, v.Reasons, tt.want, tt.rule)
		}
	}
}

// FuzzInput: Input never panics, and a program whose input is
// redirected does not read the command's: whatever a script does,
// wrapped in a block fed by /dev/null or a here-string, the command's
// input is data.
func FuzzInput(f *testing.F) {
	for _, s := range []string{"bash", "python3", "wc -l", "ssh host", "bash -c 'python3'", "sudo -u x sh -s",
		"cd a && node", "psql", "crontab -", "x=$(cat)", "source /dev/stdin", "cat | bash", "echo }; bash"} {
		f.Add(s)
	}
	g := newTestGate(f)
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 1024 {
			return
		}
		in := g.Input(cmd)
		if (in.Kind == InputData) != (in.Program == "") && len(shell.Normalize(cmd)) <= DefaultMaxCommandBytes {
			t.Fatalf("Input(%q) = %s %q: a reader without a name, or data with one", cmd, in.Kind, in.Program)
		}
		src := shell.Normalize(cmd)
		if _, err := parser.Parse(strings.NewReader(src), ""); err != nil || strings.Contains(src, "<<") {
			return // wrapped, it might not be a block of the whole script
		}
		for _, wrapped := range []string{"{\n" + src + "\n} < /dev/null", "{\n" + src + "\n} <<< x"} {
			f, err := parser.Parse(strings.NewReader(wrapped), "")
			if err != nil || len(f.Stmts) != 1 {
				continue
			}
			if in := g.Input(wrapped); in.Kind != InputData {
				t.Fatalf("Input(%q) = %s %q; want data: the block's input is given", wrapped, in.Kind, in.Program)
			}
		}
	})
}
