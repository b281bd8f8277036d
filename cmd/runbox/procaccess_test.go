package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestRun_PtraceOutsideDecided: `runbox run` with default flags and the
// gate out of the way: a command that attaches to a process it did not
// start is refused, and the result reports a decided ptrace violation
// naming that process; with --sandbox off the same attach works (the
// control).
func TestRun_PtraceOutsideDecided(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	victim := exec.Command("sleep", "600")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	pid := strconv.Itoa(victim.Process.Pid)
	script := `python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); print("ATTACHED" if libc.ptrace(16, int(sys.argv[1]), 0, 0) == 0 else "REFUSED %d" % ctypes.get_errno())' ` + pid
	run := func(args ...string) (out string, violations []struct{ Op, Target, Source string }) {
		t.Helper()
		stdout, stderr, _ := cli(t, "", nil, append(append([]string{"--yolo", "run", "--json", "--cwd", t.TempDir()}, args...), "--", script)...)
		var res struct {
			Output     string                                `json:"output"`
			Violations []struct{ Op, Target, Source string } `json:"sandbox_violations"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("run %q: %v\n%s%s", args, err, stdout, stderr)
		}
		return res.Output, res.Violations
	}
	if out, _ := run("--sandbox", "off"); !strings.Contains(out, "ATTACHED") {
		t.Fatalf("control: unconfined, the attach failed: the test proves nothing\n%s", out)
	}
	out, vs := run()
	if !strings.Contains(out, "REFUSED 1") {
		t.Errorf("confined by default: want the attach refused with EPERM, got %q", out)
	}
	want := "process " + pid + " (sleep)"
	found := false
	for _, v := range vs {
		found = found || v.Op == "ptrace" && v.Target == want && v.Source == "decided"
	}
	if !found {
		t.Errorf("violations %+v; want a decided ptrace of %s", vs, want)
	}
}
