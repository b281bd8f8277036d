package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// cliWith runs runbox in-process like cli, with the streams given (a test
// terminal's slave, for instance).
func cliWith(t *testing.T, stdin io.Reader, stdout, stderr io.Writer, env map[string]string, args ...string) int {
	t.Helper()
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	}
	return exitCode(newApp(stdin, stdout, stderr, getenv).execute(context.Background(), args))
}

// flood prints n bytes of x then END, with no newline for a terminal to
// translate.
func flood(n int) string {
	return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; printf END", n)
}

var noticeRE = regexp.MustCompile(`\n\[runbox: output truncated: (\d+) of (\d+) bytes omitted; full output in (\S+)\]\n`)

// checkWindowed asserts that out is the window of a flood(n) within limit
// bytes, and that the spill file it names holds all of it, in the private
// directory under $TMPDIR.
func checkWindowed(t *testing.T, out string, n, limit int) {
	t.Helper()
	m := noticeRE.FindStringSubmatchIndex(out)
	if m == nil {
		t.Fatalf("no truncation notice in %d bytes of output: %q...%q", len(out), out[:min(len(out), 100)], tail(out, 200))
	}
	head, tailPart := out[:m[0]], out[m[1]:]
	if len(head)+len(tailPart) > limit || !strings.HasSuffix(tailPart, "END") || strings.Trim(head, "x") != "" || len(head) < limit*2/5-3 {
		t.Fatalf("window of %d+%d bytes around the notice; want at most %d, head of x's, tail ending in END", len(head), len(tailPart), limit)
	}
	spill := out[m[6]:m[7]]
	if fi, err := os.Stat(spill); err != nil || fi.Size() != int64(n+3) {
		t.Fatalf("spill %s: %v; want the whole %d-byte stream", spill, err, n+3)
	}
	if want, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "runbox-output-*")); len(want) != 1 || filepath.Dir(spill) != want[0] {
		t.Errorf("spill %s is not in runbox's spill directory under $TMPDIR (%v)", spill, want)
	}
}

// TestRun_TerminalOutputBounded: on a terminal, plain output is the same
// window as --json's (default limit from the configuration, or the flag),
// so a flood cannot bury the terminal; the rest is in the spill file.
func TestRun_TerminalOutputBounded(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
		limit int
	}{
		{"configured default", nil, 256 << 10},
		{"flag", []string{"--output-limit", "1000"}, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			tt := newTestTerminal(t, true)
			const n = 3 << 20
			var errb bytes.Buffer
			args := append(append([]string{"run"}, tc.flags...), "--", flood(n))
			if code := cliWith(t, strings.NewReader(""), tt.slave, &errb, nil, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			out := tt.waitFor(t, "END")
			checkWindowed(t, out, n, tc.limit)
		})
	}
}

// TestRun_PipeOutputWhole: into a pipe or file every byte passes by
// default; --output-limit given explicitly bounds it like a terminal.
func TestRun_PipeOutputWhole(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const n = 3 << 20
	out, _, code := cli(t, "", nil, "run", "--", flood(n))
	if code != 0 || len(out) != n+3 || !strings.HasSuffix(out, "xEND") {
		t.Fatalf("exit %d, %d bytes; want all %d", code, len(out), n+3)
	}
	out, _, code = cli(t, "", nil, "run", "--output-limit", "5000", "--", flood(n))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	checkWindowed(t, out, n, 5000)
}

// TestRun_JSONCutKeepsText: a cut that falls inside a multi-byte
// character does not turn the output into base64: it stays text, valid
// UTF-8, with no output_encoding.
func TestRun_JSONCutKeepsText(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	// limit 10: the head is 4 bytes, "ab" and half of 😀; the tail is 6
	// bytes, the last 2 of € and "abcd".
	out, _, code := cli(t, "", nil, "run", "--json", "--output-limit", "10", "--", `printf 'ab\360\237\230\200yyyyyyyyyyyy\342\202\254abcd'`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var res struct {
		Output         string  `json:"output"`
		OutputEncoding *string `json:"output_encoding"`
		Truncated      bool    `json:"truncated"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.OutputEncoding != nil || !res.Truncated || !utf8.ValidString(res.Output) {
		t.Fatalf("output %q encoding %v truncated %v; want cut text, no encoding", res.Output, res.OutputEncoding, res.Truncated)
	}
	if !strings.HasPrefix(res.Output, "ab\n[runbox: output truncated") || !strings.HasSuffix(res.Output, "]\nabcd") {
		t.Errorf("output %q; want \"ab\", the notice, \"abcd\"", res.Output)
	}
}
