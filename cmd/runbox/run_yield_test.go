package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestRun_Yield: runbox run --yield returns a command that ends in time
// like a run (its output, its exit status), and one still running with
// its output so far, its job id on stderr and exit 75; runbox wait and
// logs then continue that job to its end.
func TestRun_Yield(t *testing.T) {
	env := jobsEnv(t)
	dir := t.TempDir()

	out, errs, code := jcli(t, env, "run", "--cwd", dir, "--yield", "60s", "--", "echo quick; exit 3")
	if code != 3 || out != "quick\n" {
		t.Errorf("run --yield of a quick command: %q, exit %d (%s); want quick, exit 3", out, code, errs)
	}

	// The job blocks on its stdin until the test writes to it, so it is
	// still running when the yield passes however slow the machine. What
	// it printed by then depends on the machine's speed: on a loaded one
	// even `echo` may not have run, so the output so far is any prefix
	// of the whole; logs below check all of it.
	out, errs, code = jcli(t, env, "run", "--cwd", dir, "--yield", "2s", "--", "echo begun; read x; echo got $x")
	if code != exitStillRunning || !strings.HasPrefix("begun\n", out) {
		t.Fatalf("run --yield of a waiting command: %q, exit %d (%s); want (a prefix of) begun, exit %d", out, code, errs, exitStillRunning)
	}
	m := regexp.MustCompile(`job ([0-9a-f]{12})`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("stderr %q names no job id", errs)
	}
	id := m[1]
	if _, errs, code := jcli(t, env, "submit", id, "there"); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	if out, _, code := jcli(t, env, "wait", "--timeout", "30s", id); code != 0 || !strings.Contains(out, "exited 0") {
		t.Errorf("wait: %q, exit %d; want exited 0", out, code)
	}
	if out, _, _ := jcli(t, env, "logs", id); out != "begun\ngot there\n" {
		t.Errorf("logs = %q; want the whole output", out)
	}

	for _, bad := range [][]string{
		{"run", "--yield", "1s", "--pty", "--", "true"},
		{"run", "--yield", "1s", "--timeout", "5s", "--", "true"},
		{"run", "--yield", "-1s", "--", "true"},
	} {
		if _, errs, code := jcli(t, env, bad...); code != exitUsage {
			t.Errorf("%v: exit %d (%s); want %d", bad, code, errs, exitUsage)
		}
	}
}
