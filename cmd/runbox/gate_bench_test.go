package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/cmd/internal/bench"
)

// TestBench_GateCheckPerCommand: gate.check times each command of the
// mixed corpus on its own, so n is the number of checks timed, and p99
// is at least p50.
func TestBench_GateCheckPerCommand(t *testing.T) {
	out, errs, code := cli(t, "", nil, "bench", "--only", "gate.check", "-n", "2", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	var m bench.Measurement
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not a measurement: %q: %v", out, err)
	}
	// The corpus: the sample of agents' commands and every rule's
	// examples (cmd/internal/bench's gateCorpus).
	if corpus := len(approval.SampleCommands()) + len(approval.RuleExamples()); m.Name != "gate.check" || m.N != 2*corpus || corpus < 400 {
		t.Errorf("measurement = %+v; want %d checks (2 rounds of the corpus)", m, 2*corpus)
	}
	if m.P50ms <= 0 || m.P99ms < m.P50ms || m.BaselineP50ms <= 0 || m.PerSecond <= 0 {
		t.Errorf("measurement = %+v", m)
	}
}

// TestBench_GateCheckJSONL runs gate.check.jsonl and gate.check.regex as
// a user would, in a real runbox process, which runs runbox check --jsonl
// over thousands of commands (5,000 a run, as docs/benchmarks.md says),
// and each baseline (parsing alone; the Python table of regular
// expressions) in processes of its own: each must answer every command,
// and the measurement says how many a second.
func TestBench_GateCheckJSONL(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "bench", "--only", "gate.check.jsonl,gate.check.regex", "-n", "1", "--json")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v: %s", err, errb.String())
	}
	dec := json.NewDecoder(&out)
	for _, want := range []struct{ name, baseline string }{
		{"gate.check.jsonl", "parse-only"},
		{"gate.check.regex", "regex table in Python"},
	} {
		var m bench.Measurement
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: not a measurement: %v", want.name, err)
		}
		if m.Name != want.name || m.N != 5000 || m.Note != "" || !strings.Contains(m.Baseline, want.baseline) {
			t.Errorf("measurement = %+v; want %s against %q", m, want.name, want.baseline)
		}
		if m.P50ms <= 0 || m.BaselineP50ms <= 0 || m.PerSecond <= 0 {
			t.Errorf("measurement = %+v; want times and commands per second", m)
		}
	}
}

// TestCheck_JSONLParseOnly: the bench's baseline reads and writes like
// check --jsonl, one line per command, and judges nothing.
func TestCheck_JSONLParseOnly(t *testing.T) {
	out, errOut, code := cli(t, "\"rm -rf /\"\n\n\"echo 'x\"\n", nil, "check", "--jsonl", "--parse-only")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `{"command":"rm -rf /","parsed":true}` + "\n" + `{"command":"echo 'x","parsed":false}` + "\n"
	if out != want {
		t.Errorf("check --jsonl --parse-only = %q; want %q", out, want)
	}
	if _, errOut, code := cli(t, "", nil, "check", "--parse-only", "ls"); code != exitUsage || !strings.Contains(errOut, "--jsonl") {
		t.Errorf("--parse-only without --jsonl: exit %d, %q; want a usage error", code, errOut)
	}
}
