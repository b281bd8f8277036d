package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGate_PromptEscapesCommand: at the terminal prompt, a command written
// to spoof the question (a newline and a forged reason, a carriage return
// and an ANSI erase-line, U+202E to reverse the rest) is shown after
// runbox's words, on one line, with every control and format character
// escaped: none of them reaches the terminal, and no line passes for a
// reason of runbox's. The same text written raw would put the forged
// reason on a line of its own.
func TestGate_PromptEscapesCommand(t *testing.T) {
	tt := newTestTerminal(t, true) // raw: the bytes collected are the bytes written
	work := t.TempDir()
	file := filepath.Join(work, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const forged = "  - harmless: lists files only"
	spoof := "chmod 666 " + file + "\n" + forged + "\nls -l\r\x1b[2K\u202e~ fr- mr"
	if !slices.Contains(strings.Split(spoof, "\n"), forged) {
		t.Fatal("the spoofing command holds no forged line; the test proves nothing")
	}
	done := make(chan int, 1)
	go func() {
		var out strings.Builder
		done <- cliWith(t, tt.slave, &out, tt.slave, map[string]string{"XDG_CONFIG_HOME": t.TempDir()}, "run", "--cwd", work, "--", spoof)
	}()
	out := tt.waitFor(t, "Allow?")
	tt.typeIn(t, "n\n")
	if code := <-done; code == 0 {
		t.Errorf("the refused command exited 0")
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() == 0o666 {
		t.Fatalf("the refused command ran (%v)", err)
	}
	start := strings.Index(out, "runbox: approval needed")
	if start < 0 {
		t.Fatalf("no question on the terminal: %q", out)
	}
	q := out[start:strings.Index(out, "Allow?")]
	lines := strings.Split(q, "\n")
	if slices.Contains(lines, forged) || strings.ContainsAny(q, "\r\x1b\u202e") {
		t.Errorf("the prompt forges a line or writes a control character:\n%q", q)
	}
	escaped := "  $ chmod 666 " + file + `\n  - harmless: lists files only\nls -l\r\x1b[2K\u202e~ fr- mr`
	at := slices.Index(lines, escaped)
	if at < 0 {
		t.Fatalf("the prompt does not show the command escaped on one line (%q):\n%s", escaped, q)
	}
	rules := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "rules: ") && strings.Contains(l, "chmod-world-writable")
	})
	if rules < 0 || rules > at {
		t.Errorf("the rule ids do not come before the command:\n%s", q)
	}
}
