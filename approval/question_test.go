package approval

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// spoofCommand is a command written to be misread in a question: a
// newline and a forged reason, a carriage return and an ANSI erase-line
// to overwrite what came before, and U+202E to show the rest reversed.
const spoofCommand = "chmod 666 ~/.ssh/config\n  - harmless: lists files only\nls -l\r\x1b[2K\u202e~ fr- mr"

// forgedReason is the line spoofCommand tries to pass for runbox's.
const forgedReason = "  - harmless: lists files only"

// TestQuestion_Escapes: each character that could hide or forge text is
// shown as an escape, and the rest as itself.
func TestQuestion_Escapes(t *testing.T) {
	tests := []struct{ cmd, shown string }{
		{"ls -l", "ls -l"},
		{"ls\n  - harmless", `ls\n  - harmless`},
		{"\x1b[2K\rrm -rf ~", `\x1b[2K\rrm -rf ~`},
		{"a\tb\x00c\x7fd\x07", `a\tb\x00c\x7fd\x07`},
		{"echo \u202eabc\u202c", `echo \u202eabc\u202c`},
		{"\u2066x\u2069 \u200e\u200f\u061c", `\u2066x\u2069 \u200e\u200f\u061c`},
		{"r\u200bm \u200c\u200d\u2060\ufeff", `r\u200bm \u200c\u200d\u2060\ufeff`},
		{"a\u0085b\u009bc", `a\u0085b\u009bc`},
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"rm\u00a0-rf\u3000/", `rm\u00a0-rf\u3000/`},
		{"\u3164\u115f\u2800\ufe0f\U000e0041", `\u3164\u115f\u2800\ufe0f\U000e0041`},
		{"\xff\xfe ok \xc3", `\xff\xfe ok \xc3`},
		{"café 日本 ñ", "café 日本 ñ"},
		{"e\u0301\u0301\u0301", `e` + "\u0301" + `\u0301\u0301`},
		{"\u0301x", `\u0301x`},
		// A backslash of the command is doubled only where it would
		// read as the start of an escape.
		{`find . -exec rm {} \;`, `find . -exec rm {} \;`},
		{`printf 'a\nb'`, `printf 'a\\nb'`},
		{`a\x1b \u202e \\ \`, `a\\x1b \\u202e \\\ \`},
		{"a\\\n", `a\\\n`},
		{"a\\\x1b", `a\\\x1b`},
		{"a\\ b", `a\ b`},
		{"x" + strings.Repeat(" ", 10) + "y", "x" + strings.Repeat(" ", maxSpaceRun) + `\x20\x20y`},
		{"a\\" + strings.Repeat(" ", 9), "a\\" + strings.Repeat(" ", maxSpaceRun) + `\x20`},
	}
	for _, tt := range tests {
		q := Question(Prompt{Command: tt.cmd, Rules: []string{"r"}})
		if got := commandLine(t, q); got != tt.shown {
			t.Errorf("Question(%q) shows %s; want %s", tt.cmd, got, tt.shown)
		}
		if back := unescape(tt.shown); back != tt.cmd {
			t.Errorf("%s reads back as %q; want %q", tt.shown, back, tt.cmd)
		}
	}
}

// TestQuestion_Layout: runbox's words come first, the command on one line
// after them, and a long command is cut with the cut said.
func TestQuestion_Layout(t *testing.T) {
	p := Prompt{Command: spoofCommand, Backend: "local", Rules: []string{"chmod-world-writable", "protected"},
		Reasons: []string{"make a file writable by everyone", "changes runbox's policy"}}
	want := "runbox: approval needed to run a command on local\n" +
		"rules: chmod-world-writable, protected\n" +
		"  - make a file writable by everyone\n" +
		"  - changes runbox's policy\n" +
		fmt.Sprintf("command (%d bytes, control and invisible characters escaped as \\n, \\x1b, \\u202e …):\n", len(spoofCommand)) +
		`  $ chmod 666 ~/.ssh/config\n  - harmless: lists files only\nls -l\r\x1b[2K\u202e~ fr- mr` + "\n"
	if got := Question(p); got != want {
		t.Errorf("Question =\n%s\nwant\n%s", got, want)
	}

	for _, tt := range []struct {
		name, cmd string
		shown     int // bytes of the command shown
	}{
		{"plain", strings.Repeat("a", 10000), MaxQuestionCommand},
		{"escapes", strings.Repeat("\x1b", 3000), MaxQuestionCommand / 4},
		{"no escape cut in two", "ab" + strings.Repeat("\u202e", 1000), 2 + 3*((MaxQuestionCommand-2)/6)},
		{"at the bound", strings.Repeat("a", MaxQuestionCommand), MaxQuestionCommand},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := Question(Prompt{Command: tt.cmd})
			line := commandLine(t, q)
			if back := unescape(line); back != tt.cmd[:tt.shown] {
				t.Errorf("shows %d bytes of the command; want %d", len(back), tt.shown)
			}
			cut := len(tt.cmd) - tt.shown
			said := fmt.Sprintf("\n  … (%d more bytes cut)\n", cut)
			if strings.HasSuffix(q, said) != (cut > 0) || cut == 0 && strings.Contains(q, "cut)") {
				t.Errorf("question ends %q; want the cut of %d bytes said (only if any)", q[max(0, len(q)-40):], cut)
			}
		})
	}
}

// TestQuestion_SpoofControl: the check that a question forges no line of
// runbox's is real: the command shown as the prompt used to show it (as
// is, after a label) forges the reason line; Question does not.
func TestQuestion_SpoofControl(t *testing.T) {
	p := Prompt{Command: spoofCommand, Rules: []string{"chmod-world-writable"}, Reasons: []string{"make a file writable by everyone"}}
	raw := fmt.Sprintf("runbox: approval needed to run:\n  %s\n  - %s\n", p.Command, p.Reasons[0])
	if !forges(raw) {
		t.Fatalf("the raw question does not forge the reason; the check below proves nothing:\n%s", raw)
	}
	if q := Question(p); forges(q) || strings.ContainsAny(q, "\r\x1b\u202e") {
		t.Errorf("Question forges a line or passes a control character on:\n%q", q)
	}
}

// forges reports whether text holds the forged reason as a line of its
// own.
func forges(text string) bool {
	for l := range strings.Lines(text) {
		if strings.TrimSuffix(l, "\n") == forgedReason {
			return true
		}
	}
	return false
}

// FuzzQuestion: whatever the command, reasons and rule ids, the question
// holds no raw control, format or invisible character, keeps its layout
// (runbox's lines first, the command on one line of its own starting with
// its first byte, then the cut, said), reads back to the command, and
// stays within its bounds.
func FuzzQuestion(f *testing.F) {
	f.Add(spoofCommand, "reason\nforged", "rule", "local")
	f.Add(strings.Repeat("\\\x1b\u202e", 2000), "", "", "")
	f.Add("a\\\\\\n \\", "\x85", "\u2066", "\xff")
	f.Add(strings.Repeat(" ", 100)+"rm -rf ~", "r", "r", "docker")
	f.Fuzz(func(t *testing.T, cmd, reason, rule, backend string) {
		p := Prompt{Command: cmd, Backend: backend, Rules: []string{rule, "too-complex"}, Reasons: []string{reason, "x"}}
		q := Question(p)
		if !utf8.ValidString(q) {
			t.Fatalf("question is not UTF-8: %q", q)
		}
		for _, r := range q {
			if r != '\n' && (!unicode.IsPrint(r) || invisible(r)) {
				t.Fatalf("question holds %U: %q", r, q)
			}
		}
		lines := strings.Split(strings.TrimSuffix(q, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "runbox: approval needed") || !strings.HasPrefix(lines[1], "rules: ") ||
			!strings.HasSuffix(lines[1], "too-complex") && !strings.Contains(lines[1], "cut)") {
			t.Fatalf("runbox's words do not come first:\n%s", q)
		}
		if !strings.HasPrefix(lines[2], "  - ") || lines[3] != "  - x" || !strings.HasPrefix(lines[4], "command (") {
			t.Fatalf("reasons are not one line each:\n%s", q)
		}
		shown, ok := strings.CutPrefix(lines[5], "  $ ")
		if !ok || len(shown) > MaxQuestionCommand {
			t.Fatalf("command line %q: not after the label, or longer than %d bytes", lines[5], MaxQuestionCommand)
		}
		back := unescape(shown)
		if !strings.HasPrefix(cmd, back) {
			t.Fatalf("shown %q reads back as %q, which does not start %q", shown, back, cmd)
		}
		switch cut := len(cmd) - len(back); {
		case cut == 0 && len(lines) != 6:
			t.Fatalf("whole command shown, yet %d lines:\n%s", len(lines), q)
		case cut > 0 && (len(lines) != 7 || lines[6] != fmt.Sprintf("  … (%d more bytes cut)", cut)):
			t.Fatalf("%d bytes cut, not said:\n%s", cut, q)
		case cut > 0 && len(shown)+len(`\U0010ffff`) <= MaxQuestionCommand:
			t.Fatalf("cut %d bytes with room left (%d bytes shown)", cut, len(shown))
		}
	})
}

// commandLine returns the escaped command a question shows.
func commandLine(t *testing.T, q string) string {
	t.Helper()
	for l := range strings.Lines(q) {
		if s, ok := strings.CutPrefix(l, "  $ "); ok {
			return strings.TrimSuffix(s, "\n")
		}
	}
	t.Fatalf("no command line in %q", q)
	return ""
}

// unescape reads an escaped command back: the inverse of the escaping
// Question documents, written from that description.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		hex := func(n int) uint64 {
			v, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
			if err != nil {
				panic(fmt.Sprintf("bad escape in %q at %d", s, i))
			}
			i += 1 + n
			return v
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'n':
			b.WriteByte('\n')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		case 'x':
			b.WriteByte(byte(hex(2)))
		case 'u':
			b.WriteRune(rune(hex(4)))
		case 'U':
			b.WriteRune(rune(hex(8)))
		default:
			b.WriteByte('\\')
		}
	}
	return b.String()
}
