package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRun_ExitCode(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"run", "--", "sh", "-c", "exit 3"}, 3},
		{[]string{"run", "--", "true"}, 0},
		{[]string{"run", "--", "exit 7"}, 7},
		{[]string{"run", "--", "runbox-missing-cmd"}, 127},
		{[]string{"run", "--cwd", "/runbox-missing-dir", "--", "pwd"}, 126},
		{[]string{"run", "--cwd", "/etc/passwd", "--", "pwd"}, 126},
		{[]string{"run", "--backend", "nope", "--", "true"}, 125},
		{[]string{"run", "--bogus-flag", "--", "true"}, 2},
		{[]string{"run"}, 2},
		{[]string{"run", "--"}, 2},
		{[]string{"run", "--", ""}, 2},
		{[]string{"run", "--", "  \n"}, 2},
		{[]string{"run", "--timeout", "-1s", "--", "true"}, 2},
		{[]string{"run", "--output-limit", "-5", "--", "true"}, 2},
	}
	for _, c := range cases {
		_, stderr, code := cli(t, "", nil, c.args...)
		if code != c.code {
			t.Errorf("runbox %q exited %d; want %d (stderr %q)", c.args, code, c.code, stderr)
		}
	}
}

func TestRun_UnknownBackendListsKnown(t *testing.T) {
	_, stderr, _ := cli(t, "", nil, "run", "--backend", "dokcer", "--", "true")
	if !strings.Contains(stderr, `unknown backend "dokcer"`) || !strings.Contains(stderr, "local") {
		t.Errorf("stderr = %q; want the unknown name and the known ones", stderr)
	}
}

// TestRun_TimeoutLeavesNothing: a timed-out command exits 124 and leaves no
// process behind, even one that escaped with setsid after a double fork.
func TestRun_TimeoutLeavesNothing(t *testing.T) {
	start := time.Now()
	_, stderr, code := cli(t, "", nil, "run", "--timeout", "1s", "--", "bash -c '( setsid sleep 617 & ) ; sleep 60'")
	if code != 124 {
		t.Fatalf("exit %d; want 124 (stderr %q)", code, stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(stderr, "timed out") {
		t.Errorf("stderr %q does not say it timed out", stderr)
	}
	if pids := pgrep(t, "sleep 617"); len(pids) > 0 {
		t.Fatalf("left behind: %v", pids)
	}
}

func pgrep(t *testing.T, cmdline string) []string {
	t.Helper()
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		if strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			if st, _ := os.ReadFile(d + "/stat"); !strings.Contains(string(st), ") Z ") {
				found = append(found, filepath.Base(d))
			}
		}
	}
	return found
}

// TestRun_SecretsStripped: provider keys in runbox's environment never
// reach the command.
func TestRun_SecretsStripped(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-runbox-test-secret")
	t.Setenv("MODAL_TOKEN_SECRET", "modal-runbox-test-secret")
	t.Setenv("HARMLESS_TEST_VAR", "visible")
	out, _, code := cli(t, "", nil, "run", "--", "env")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "runbox-test-secret") || strings.Contains(out, "OPENAI_API_KEY") {
		t.Fatalf("secret reached the command:\n%s", out)
	}
	if !strings.Contains(out, "HARMLESS_TEST_VAR=visible") {
		t.Errorf("harmless variable missing")
	}
}

func TestRun_Stdin(t *testing.T) {
	out, _, code := cli(t, "from stdin\n", nil, "run", "--", "cat")
	if code != 0 || out != "from stdin\n" {
		t.Fatalf("stdin: exit %d, out %q", code, out)
	}
}

// TestRun_JSON compares the result object with a golden file (duration
// masked).
func TestRun_JSON(t *testing.T) {
	out, _, code := cli(t, "", nil, "run", "--json", "--cwd", "/", "--", "echo out; echo err >&2; exit 3")
	if code != 3 {
		t.Fatalf("exit %d; want 3", code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	masked := regexp.MustCompile(`"duration_ns":\d+`).ReplaceAllString(out, `"duration_ns":0`)
	golden(t, "run-json.golden", masked)
}

func TestRun_JSONTruncated(t *testing.T) {
	out, _, _ := cli(t, "", nil, "run", "--json", "--output-limit", "1000", "--", "seq 100000")
	var res struct {
		Output     string `json:"output"`
		Truncated  bool   `json:"truncated"`
		SpillPath  string `json:"spill_path"`
		TotalBytes int64  `json:"total_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.SpillPath == "" || res.TotalBytes != 588895 {
		t.Fatalf("truncation: %+v", res)
	}
	defer os.Remove(res.SpillPath)
	full, _ := os.ReadFile(res.SpillPath)
	if len(full) != 588895 {
		t.Errorf("spill file has %d bytes", len(full))
	}
}

func TestRun_ConfigErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("timout: 3s\n"), 0o600)
	_, stderr, code := cli(t, "", nil, "--config", p, "run", "--", "true")
	if code != 125 || !strings.Contains(stderr, `unknown key "timout"`) || !strings.Contains(stderr, p) {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestDoctor(t *testing.T) {
	out, _, code := cli(t, "", nil, "doctor")
	if code != 0 || !strings.Contains(out, "local") || !strings.Contains(out, "tree_kill") || !strings.Contains(out, "containment:") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"run", "doctor", "bench", "check"} {
		out, _, code := cli(t, "", nil, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, out)
		}
	}
}

// TestBench_JSON: every measurement line has the fields the design fixes.
func TestBench_JSON(t *testing.T) {
	out, stderr, code := cli(t, "", nil, "bench", "--json", "-n", "5", "--only", "true,gate.check")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 measurements, got:\n%s", out)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		for _, k := range []string{"name", "backend", "n", "p50_ms", "p99_ms", "baseline", "baseline_p50_ms"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%q lacks %s", l, k)
			}
		}
		if m["note"] != nil {
			t.Errorf("measurement failed: %v", m["note"])
		}
	}
}

// TestRun_JSONBinary: output that is not UTF-8 reaches --json intact, as
// base64, marked as such.
func TestRun_JSONBinary(t *testing.T) {
	out, _, code := cli(t, "", nil, "run", "--json", "--", `printf 'a\377\000b'`)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var res struct {
		Output         string `json:"output"`
		OutputEncoding string `json:"output_encoding"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(res.Output)
	if res.OutputEncoding != "base64" || err != nil || string(b) != "a\xff\x00b" {
		t.Fatalf("binary output = %q (%s); want base64 of a\\xff\\x00b", res.Output, res.OutputEncoding)
	}
}

// TestHelp_Golden keeps the help text a user reads under review: a change
// to a flag or a description shows as a diff of testdata/help-*.golden
// (regenerate with -update).
func TestHelp_Golden(t *testing.T) {
	for _, cmd := range [][]string{{"--help"}, {"run", "--help"}, {"start", "--help"}, {"check", "--help"}} {
		out, _, code := cli(t, "", nil, cmd...)
		if code != 0 {
			t.Fatalf("%v: exit %d", cmd, code)
		}
		name := "help-root.golden"
		if cmd[0] != "--help" {
			name = "help-" + cmd[0] + ".golden"
		}
		golden(t, name, out)
	}
}

// An option the local backend cannot enforce is refused, never silently
// dropped: a user asking for no network must not get the host's.
func TestRun_LocalRefusesWhatItCannotEnforce(t *testing.T) {
	for _, args := range [][]string{
		{"--sandbox", "off", "run", "--network", "none", "--", "true"},
		{"run", "--network", "bridge", "--", "true"},
		{"run", "--image", "debian", "--", "true"},
		{"run", "--workspace", "--", "true"},
	} {
		_, stderr, code := cli(t, "", nil, args...)
		if code != exitRunbox || !strings.Contains(stderr, "local") {
			t.Errorf("%q: exit %d, %q; want 125 and a message naming the local backend", args, code, stderr)
		}
	}
}

// TestRun_NetworkNoneUnderTheSandbox: on this machine --network none is
// the sandbox's network mode off: no IPv4 or IPv6 socket at all, loopback
// included (a control run shows the same connection works without it).
func TestRun_NetworkNoneUnderTheSandbox(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	out, stderr, code := cli(t, "", nil, "--yolo", "run", "--cwd", dir, "--network", "none", "--", dial)
	if code == 0 || strings.Contains(out, "connected") {
		t.Errorf("--network none: exit %d, %q %q; want the connection refused", code, out, stderr)
	}
	out, stderr, code = cli(t, "", nil, "--yolo", "--sandbox", "off", "run", "--cwd", dir, "--", dial)
	if code != 0 || !strings.Contains(out, "connected") {
		t.Errorf("control: exit %d, %q %q; want connected", code, out, stderr)
	}
}

// TestRun_PidsLimitHasItsOwnStatus protects issue 26's distinct exit
// status: a command that fails because its container refused it more
// tasks makes runbox exit 71 (whatever status the program chose for its
// failed fork) and say why, and leaves none of its tasks behind. The
// control, the same program under a limit it stays within, exits 0.
func TestRun_PidsLimitHasItsOwnStatus(t *testing.T) {
	dir := t.TempDir()
	script := "import os, sys, time\nfor i in range(int(sys.argv[1])):\n    if os.fork() == 0:\n        time.sleep(600); os._exit(0)\n"
	if err := os.WriteFile(filepath.Join(dir, "forker.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(pids, forks string) (string, int) {
		_, stderr, code := cli(t, "", nil, "run", "--sandbox", "off", "--cwd", dir, "--pids", pids, "--timeout", "120s", "--", "python3 forker.py "+forks)
		return stderr, code
	}
	if stderr, code := run("64", "4"); code != 0 {
		t.Fatalf("within the limit: exit %d (%s); want 0", code, stderr)
	}
	stderr, code := run("16", "64")
	if code != 71 || !strings.Contains(stderr, "pids limit") {
		t.Errorf("over the limit: exit %d, stderr %q; want 71 and the pids limit named", code, stderr)
	}
	if pids := pgrep(t, "python3 forker.py"); len(pids) > 0 {
		t.Errorf("left behind: %v", pids)
	}
}
