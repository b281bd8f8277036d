package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCode_ExitStatus: one cell in a fresh kernel; the exit status says
// how it ended, and the gate refuses unattended code on the host.
func TestCode_ExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stdin    string
		args     []string
		code     int
		out, err string
	}{
		{"ok", "", []string{"--yolo", "code", "x = 41\nprint(x + 1)"}, 0, "42\n", ""},
		{"stdin", "print('from stdin')", []string{"--yolo", "code", "-"}, 0, "from stdin\n", ""},
		{"last expression", "", []string{"--yolo", "code", "6 * 7"}, 0, "42\n", ""},
		{"exception", "", []string{"--yolo", "code", "1/0"}, 1, "", "ZeroDivisionError"},
		{"sys.exit", "", []string{"--yolo", "code", "import sys; sys.exit(3)"}, 3, "", ""},
		{"timeout", "", []string{"--yolo", "code", "--timeout", "300ms", "while True: pass"}, 124, "", "KeyboardInterrupt"},
		{"tool call", "", []string{"--yolo", "code", "import runbox; print(runbox.terminal('echo via-gate')['output'], end='')"}, 0, "via-gate\n", ""},
		{"refused unattended", "", []string{"--sandbox", "off", "code", "import shutil"}, 125, "", "inline-code"},
		{"confined, runs like a script", "", []string{"--sandbox", "workspace", "code", "print(1)"}, 0, "1\n", ""},
		{"no code", "", []string{"--yolo", "code", " "}, 2, "", "no code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := cli(t, tc.stdin, nil, tc.args...)
			if code != tc.code || out != tc.out || !strings.Contains(errs, tc.err) {
				t.Errorf("runbox %q = %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tc.args, code, out, errs, tc.code, tc.out, tc.err)
			}
		})
	}
}

func TestCode_JSON(t *testing.T) {
	out, _, code := cli(t, "", nil, "--yolo", "code", "--json", "print('hi')\n{'a': 1}")
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("code --json = %d, %q: %v", code, out, err)
	}
	if r["status"] != "ok" || r["stdout"] != "hi\n" || r["result"] != "{'a': 1}" {
		t.Errorf("reply = %v", r)
	}
}
