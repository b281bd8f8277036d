package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// caseNames are the names of the case table, in its order: what --only
// takes and what dashboards key on. Breaks if a case is renamed, lost or
// moved.
var caseNames = []string{
	"true", "true.sandboxed", "true.sandboxed.paced", "true.paced", "true.cold",
	"true.changes", "sed.changes",
	"gate.check", "gate.check.jsonl", "gate.check.regex",
	"jobs.throughput", "jobs.idle",
	"mcp.terminal",
	"ssh-true", "ssh-true-vs-controlmaster", "ssh.oneshot",
	"docker-exec-true", "docker-create-to-first-command", "docker-create-to-first-command-pooled",
	"kubernetes-create-to-first-command", "kubernetes-exec",
	"kubernetes-create-to-first-command.kubectl", "kubernetes-exec.kubectl",
}

func TestCaseTable_Names(t *testing.T) {
	var got []string
	for _, c := range allCases(Host{Service: newService(t, nil)}, SSHTarget{}) {
		got = append(got, c.name)
		if c.backend == "" || c.baseline == "" || c.n <= 0 || (c.setup == nil) == (c.custom == nil) {
			t.Errorf("case %s: backend %q, baseline %q, n %d, setup and custom both set or both nil", c.name, c.backend, c.baseline, c.n)
		}
	}
	if !slices.Equal(got, caseNames) {
		t.Errorf("case table = %q;\nwant %q", got, caseNames)
	}
}

// TestSelectCases: --only keeps the table's order, whatever order the
// names come in; a name that is no case fails with every valid name.
func TestSelectCases(t *testing.T) {
	all := []caseDef{{name: "a"}, {name: "b"}, {name: "c"}}
	if got, err := selectCases(all, nil); err != nil || len(got) != 3 {
		t.Errorf("no --only: %d cases, %v; want all 3", len(got), err)
	}
	got, err := selectCases(all, []string{"c", "a"})
	if err != nil || len(got) != 2 || got[0].name != "a" || got[1].name != "c" {
		t.Errorf("--only c,a = %+v, %v; want a then c", got, err)
	}
	_, err = selectCases(all, []string{"a", "x"})
	var u *UnknownCaseError
	if !errors.As(err, &u) || u.Name != "x" || !slices.Equal(u.Valid, []string{"a", "b", "c"}) {
		t.Errorf("--only a,x: %#v; want an UnknownCaseError for x listing a, b, c", err)
	}
}

// TestRun_RefusesWhatItCannotUse: a Host without a service or an output,
// and negative sizes, are refused before anything is measured or printed.
func TestRun_RefusesWhatItCannotUse(t *testing.T) {
	svc := newService(t, nil)
	var out bytes.Buffer
	for name, tc := range map[string]struct {
		h Host
		o Options
	}{
		"no service":     {Host{Stdout: &out}, Options{}},
		"no stdout":      {Host{Service: svc}, Options{}},
		"negative n":     {Host{Service: svc, Stdout: &out}, Options{N: -1}},
		"negative scale": {Host{Service: svc, Stdout: &out}, Options{Scale: -1}},
		"unknown case":   {Host{Service: svc, Stdout: &out}, Options{Only: []string{"true", "nope"}}},
	} {
		if err := Run(t.Context(), tc.h, tc.o); err == nil {
			t.Errorf("%s: Run succeeded; want an error", name)
		}
	}
	if out.Len() > 0 {
		t.Errorf("a refused run printed %q", out.String())
	}
}

// TestRun_GateCheckPerCommand: gate.check times each command of the
// corpus on its own, so n is the number of checks timed (rounds × the
// corpus), and p99 is at least p50; its JSON line carries the ratio.
func TestRun_GateCheckPerCommand(t *testing.T) {
	var out bytes.Buffer
	h := Host{Service: newService(t, nil), Stdout: &out}
	if err := Run(t.Context(), h, Options{JSON: true, N: 2, Only: []string{"gate.check"}}); err != nil {
		t.Fatal(err)
	}
	var m Measurement
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("not one measurement: %q: %v", out.String(), err)
	}
	if corpus := len(gateCorpus()); m.Name != "gate.check" || m.N != 2*corpus || corpus < 400 {
		t.Errorf("measurement = %+v; want %d checks (2 rounds of the corpus)", m, 2*corpus)
	}
	if m.P50ms <= 0 || m.P99ms < m.P50ms || m.BaselineP50ms <= 0 || m.PerSecond <= 0 || m.Ratio <= 0 || m.Note != "" {
		t.Errorf("measurement = %+v", m)
	}
}

// TestRun_NoteWhenUnmeasurable: a case that cannot be taken here is a
// row with a note saying why, not an error that hides the other rows.
func TestRun_NoteWhenUnmeasurable(t *testing.T) {
	var out bytes.Buffer
	h := Host{Service: newService(t, nil), Stdout: &out} // no OpenRegistry
	if err := Run(t.Context(), h, Options{Only: []string{"jobs.idle", "gate.check"}, N: 1}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "gate.check ") || !strings.HasPrefix(lines[2], "jobs.idle ") || !strings.Contains(lines[2], "OpenRegistry") {
		t.Errorf("table = %q; want gate.check measured and jobs.idle with a note", out.String())
	}
}

// TestRun_CancelledReturnsCause: once ctx ends, Run returns its cause
// and prints nothing of the measurement cut short (Ctrl-C is exit 130
// in the CLI through the cause).
func TestRun_CancelledReturnsCause(t *testing.T) {
	stop := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(stop)
	var out bytes.Buffer
	h := Host{Service: newService(t, nil), Stdout: &out}
	if err := Run(ctx, h, Options{JSON: true, Only: []string{"gate.check"}}); !errors.Is(err, stop) {
		t.Errorf("Run after cancel = %v; want the cause", err)
	}
	if out.Len() > 0 {
		t.Errorf("a cancelled run printed %q", out.String())
	}
}
