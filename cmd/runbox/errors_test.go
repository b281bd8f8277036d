package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// TestRun_JSONEarlyFailure: with --json, a command that never ran still
// answers on stdout, with the error and the exit status runbox exits
// with, so a caller parsing stdout is never left with nothing. The golden
// file holds one case per paragraph.
func TestRun_JSONEarlyFailure(t *testing.T) {
	cases := [][]string{
		{"run", "--json", "--", "rm -rf /"},
		{"run", "--json", "--cwd", "/runbox-missing-dir", "--", "true"},
		{"run", "--json", "--backend", "nope", "--", "true"},
		{"run", "--json", "--env", "NOEQUALS", "--", "true"},
		{"run", "--json", "--memory", "lots", "--", "true"},
		{"run", "--json", "--timeout", "-3s", "--", "true"},
		{"run", "--json", "--", ""},
	}
	var all strings.Builder
	for _, args := range cases {
		out, stderr, code := cli(t, "", nil, args...)
		fmt.Fprintf(&all, "$ runbox %q\nexit %d\n%s\n", args, code, out)
		if !strings.HasPrefix(out, "{") || !strings.Contains(out, fmt.Sprintf(`"exit_code":%d`, code)) {
			t.Errorf("runbox %q: stdout %q lacks a JSON object with exit_code %d", args, out, code)
		}
		if stderr == "" {
			t.Errorf("runbox %q: nothing on stderr for a person", args)
		}
	}
	golden(t, "run-json-errors.golden", all.String())
}

// internalPrefixRE is a message that starts with, or wraps, an internal
// package's name.
var internalPrefixRE = regexp.MustCompile(`(^|: )(envs|local|procregistry|approval|termination|spawn|gated|agent): `)

// TestCLI_MessagesSpeakToUsers: errors the CLI prints do not lead with Go
// package names, while the error values keep every wrapped cause.
func TestCLI_MessagesSpeakToUsers(t *testing.T) {
	state := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--cwd", "/runbox-missing-dir", "--", "true"}, "runbox: cannot enter working directory /runbox-missing-dir: no such file or directory\n"},
		{[]string{"run", "--backend", "nope", "--", "true"}, `runbox: unknown backend "nope"`},
		{[]string{"run", "--", "rm -rf /"}, "runbox: refused by the command gate: command denied (hardline)"},
		{[]string{"logs", "--offset", "-1", "nosuchjob"}, "runbox: logs: --offset and --tail want a number >= 0\n"},
		{[]string{"logs", "nosuchjob"}, `runbox: job "nosuchjob": not found`},
	}
	for _, c := range cases {
		_, stderr, _ := cli(t, "", map[string]string{"RUNBOX_STATE_DIR": state}, c.args...)
		if !strings.HasPrefix(stderr, c.want) {
			t.Errorf("runbox %q: stderr %q; want it to start with %q", c.args, stderr, c.want)
		}
		for _, line := range strings.Split(stderr, "\n") {
			if internalPrefixRE.MatchString(line) {
				t.Errorf("runbox %q: %q names an internal package", c.args, line)
			}
		}
	}
	err := fmt.Errorf("envs: open local: local: %w", &envs.DirError{Dir: "/x", Err: &fs.PathError{Op: "stat", Path: "/x", Err: fs.ErrNotExist}})
	if got := service.Message(err); got != "runbox: cannot enter working directory /x: file does not exist" {
		t.Errorf("userMessage = %q", got)
	}
	if !errors.Is(err, fs.ErrNotExist) || exitCode(err) != envs.ExitCannotEnter {
		t.Errorf("the error lost its cause or its status (%d)", exitCode(err))
	}
}

// TestLogs_TailZeroPrintsNothing: --tail 0 asks for the last zero lines,
// so it prints nothing (not the whole log); a negative --tail or --offset
// is a usage error.
func TestLogs_TailZeroPrintsNothing(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{"RUNBOX_STATE_DIR": state}
	out, stderr, code := cli(t, "", env, "logs", "--tail", "0", "anyjob")
	if out != "" || code != 0 {
		t.Errorf("logs --tail 0: exit %d, out %q, stderr %q; want nothing", code, out, stderr)
	}
	for _, args := range [][]string{{"logs", "--tail", "-1", "j"}, {"logs", "--offset", "-5", "j"}} {
		if _, stderr, code := cli(t, "", env, args...); code != exitUsage || !strings.Contains(stderr, ">= 0") {
			t.Errorf("runbox %q: exit %d stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// TestDoctor_BrokenConfig: doctor reports a configuration file it cannot
// read in its first line, still reports the rest (on the defaults), and
// exits non-zero.
func TestDoctor_BrokenConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("timout: 3s\n"), 0o600)
	out, stderr, code := cli(t, "", nil, "--config", p, "doctor")
	first, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, "config:      broken: ") || !strings.Contains(first, p) || !strings.Contains(first, `unknown key "timout"`) {
		t.Errorf("first line %q does not say what is wrong with %s", first, p)
	}
	if !strings.Contains(out, "tree_kill") || !strings.Contains(out, "child environment:") {
		t.Errorf("the rest of the report is missing:\n%s", out)
	}
	if code != exitRunbox {
		t.Errorf("exit %d; want %d (stderr %q)", code, exitRunbox, stderr)
	}
	out, _, code = cli(t, "", nil, "--config", p, "doctor", "--json")
	if code != exitRunbox || !strings.Contains(out, `"config_error":`) {
		t.Errorf("doctor --json: exit %d, no config_error:\n%s", code, out)
	}
}

// TestDoctor_AdviceNamesNoPackages: doctor's advice points to what a CLI
// user can run, not to Go packages.
func TestDoctor_AdviceNamesNoPackages(t *testing.T) {
	out, _, code := cli(t, "", nil, "doctor")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, pkg := range []string{"procregistry", "envs.", "spawn.", "termination."} {
		if strings.Contains(out, pkg) {
			t.Errorf("doctor mentions %q:\n%s", pkg, out)
		}
	}
}

// TestGate_AlwaysSaysWhereSaved: answering "a" (always) at the gate's
// prompt saves the approval and says which file it went to.
func TestGate_AlwaysSaysWhereSaved(t *testing.T) {
	tt := newTestTerminal(t, false)
	cfgHome, work := t.TempDir(), t.TempDir()
	file := filepath.Join(cfgHome, "runbox", "config.yaml")
	done := make(chan int, 1)
	go func() {
		var out strings.Builder
		done <- cliWith(t, tt.slave, &out, tt.slave, map[string]string{"XDG_CONFIG_HOME": cfgHome},
			// Unconfined: under the sandbox a delete inside the workspace
			// does not ask (the kernel holds it).
			"--sandbox", "off", "run", "--cwd", work, "--", "rm -rf ./runbox-nothing-here")
	}()
	tt.waitFor(t, "Allow?")
	tt.typeIn(t, "a\n")
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; terminal shows %q", code, tt.output())
	}
	if out := tt.waitFor(t, "saved to "+file); !strings.Contains(out, "runbox: approval saved to "+file) {
		t.Errorf("terminal shows %q", out)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "runbox-nothing-here") {
		t.Errorf("%s: %v\n%s", file, err, b)
	}
}
