package bench

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/runbox/runbox/approval"
)

// jsonlCommands is how many commands one run of gate.check.jsonl feeds
// runbox check --jsonl: enough that the process start is a small part of
// a run, as it is for a caller with a batch to judge.
const jsonlCommands = 5000

// maxVerdictLine bounds one line of check --jsonl's answer: the bound
// check --jsonl puts on a line of its input, since a verdict repeats its
// command.
const maxVerdictLine = 4 << 20

// gateCases are the command gate's measurements:
//
//   - gate.check: each command of a mixed corpus checked one by one in
//     this process, each check timed on its own: p50 and p99 are per
//     command, against parsing the same command alone;
//   - gate.check.jsonl: `runbox check --jsonl` (this executable) run end
//     to end over jsonlCommands commands drawn from the corpus, process
//     start included, against the same executable only parsing them
//     (check --jsonl --parse-only). p50 and p99 are per command (a run's
//     time over its commands), per_second is commands a second at the
//     p50 (the baseline's is 1000 / baseline_p50_ms);
//   - gate.check.regex: the same run of check --jsonl against the gate
//     many agent harnesses ship, a table of regular expressions tried in
//     order by Python over the same input (regextable.py): what runbox's
//     parsing costs over matching text, end to end.
func gateCases(h Host) []caseDef {
	return []caseDef{
		{name: "gate.check", backend: "approval", baseline: "shell parse only", n: 20,
			custom: func(ctx context.Context, p params) (Measurement, error) { return gateCheck(ctx, h.Service.Getenv, p.n) }},
		{name: "gate.check.jsonl", backend: "approval", baseline: "check --jsonl --parse-only", n: 3, maxN: 50,
			custom: func(ctx context.Context, p params) (Measurement, error) { return gateJSONL(ctx, p) }},
		{name: "gate.check.regex", backend: "approval", baseline: regexBaseline, n: 3, maxN: 50,
			custom: func(ctx context.Context, p params) (Measurement, error) { return gateRegex(ctx, p) }},
	}
}

// regexTable is the baseline of gate.check.regex: a Python script that
// judges check --jsonl's input with a table of regular expressions.
//
//go:embed regextable.py
var regexTable []byte

const regexBaseline = "regex table in Python (42 patterns)"

// gateCorpus is what the gate is measured on: the sample of commands
// agents really run (builds, tests, git, greps, package installs, pipes,
// loops, here-documents) and every example of every rule (deletes,
// force pushes, pipes into a shell, code run through wrappers and
// strings, writes to protected paths): the commands the gate must work
// hardest on, next to the ones it sees most.
func gateCorpus() []string {
	return append(approval.SampleCommands(), approval.RuleExamples()...)
}

// gateCheck times rounds passes over the corpus, each command on its
// own, through a gate with the default policy, then the same for the
// parser.
func gateCheck(ctx context.Context, getenv func(string) string, rounds int) (Measurement, error) {
	gate, err := approval.New(approval.Options{Protect: approval.DefaultProtection(getenv)})
	if err != nil {
		return Measurement{}, err
	}
	cmds := gateCorpus()
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	dir, _ := os.Getwd()
	check := func(c string) { gate.Check(ctx, approval.Request{Command: c, Backend: "local", Dir: dir}) }
	parse := func(c string) { parser.Parse(strings.NewReader(c), "") }
	// One pass each unmeasured, so neither pays for a cold start alone.
	for _, c := range cmds {
		check(c)
		parse(c)
	}
	rounds = max(1, rounds)
	opT := make([]time.Duration, 0, rounds*len(cmds))
	baseT := make([]time.Duration, 0, rounds*len(cmds))
	var total time.Duration
	for range rounds {
		if err := ctx.Err(); err != nil {
			return Measurement{}, err
		}
		for _, c := range cmds {
			start := time.Now()
			check(c)
			d := time.Since(start)
			opT = append(opT, d)
			total += d
		}
		for _, c := range cmds {
			start := time.Now()
			parse(c)
			baseT = append(baseT, time.Since(start))
		}
	}
	return Measurement{
		Name: "gate.check", Backend: "approval", N: len(opT),
		P50ms: quantile(opT, 0.5), P99ms: quantile(opT, 0.99),
		Baseline: "shell parse only", BaselineP50ms: quantile(baseT, 0.5),
		PerSecond: float64(len(opT)) / total.Seconds(),
	}, nil
}

// gateJSONL runs this executable's check --jsonl over a large input, and
// the same with --parse-only, p.n times each.
func gateJSONL(ctx context.Context, p params) (Measurement, error) {
	exe, err := os.Executable()
	if err != nil {
		return Measurement{}, fmt.Errorf("finding this executable: %w", err)
	}
	return jsonlAgainst(ctx, p, "gate.check.jsonl", "check --jsonl --parse-only", exe, "check", "--jsonl", "--parse-only")
}

// gateRegex runs check --jsonl and the regular-expression table over the
// same input, p.n times each.
func gateRegex(ctx context.Context, p params) (Measurement, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return Measurement{}, fmt.Errorf("bench: the regex table baseline needs python3: %w", err)
	}
	dir, err := os.MkdirTemp("", "runbox-bench-regex-")
	if err != nil {
		return Measurement{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "regextable.py")
	if err := os.WriteFile(script, regexTable, 0o644); err != nil {
		return Measurement{}, err
	}
	return jsonlAgainst(ctx, p, "gate.check.regex", regexBaseline, python, script)
}

// jsonlAgainst times this executable's check --jsonl over jsonlInput,
// then base... over the same input, p.n times each (after one run each
// that warms the page cache); p50 and p99 are per command.
func jsonlAgainst(ctx context.Context, p params, name, baseline string, base ...string) (Measurement, error) {
	exe, err := os.Executable()
	if err != nil {
		return Measurement{}, fmt.Errorf("finding this executable: %w", err)
	}
	in := jsonlInput()
	runs := func(argv ...string) ([]time.Duration, error) {
		var ds []time.Duration
		for i := range p.n + 1 {
			p.progress.step(name+" "+strings.Join(argv, " "), i, p.n)
			d, err := checkJSONL(ctx, argv[0], in, argv[1:]...)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				ds = append(ds, d/jsonlCommands)
			}
		}
		return ds, nil
	}
	opT, err := runs(exe, "check", "--jsonl")
	if err != nil {
		return Measurement{}, err
	}
	baseT, err := runs(base...)
	if err != nil {
		return Measurement{}, fmt.Errorf("baseline: %w", err)
	}
	return Measurement{
		Name: name, Backend: "approval", N: p.n * jsonlCommands,
		P50ms: quantile(opT, 0.5), P99ms: quantile(opT, 0.99),
		Baseline: baseline, BaselineP50ms: quantile(baseT, 0.5),
		PerSecond: 1 / (quantile(opT, 0.5) / 1000),
	}, nil
}

// jsonlInput is check --jsonl's input: jsonlCommands commands, the
// corpus over and over, one JSON string a line.
func jsonlInput() []byte {
	corpus := gateCorpus()
	var in bytes.Buffer
	for i := range jsonlCommands {
		b, _ := json.Marshal(corpus[i%len(corpus)])
		in.Write(b)
		in.WriteByte('\n')
	}
	return in.Bytes()
}

// checkJSONL times one run of `exe args...` over in, and fails unless it
// answered every command.
func checkJSONL(ctx context.Context, exe string, in []byte, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w: %s", exe, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	if n, err := countVerdicts(&out); err != nil || n != jsonlCommands {
		return 0, fmt.Errorf("%s %s: answered %d of %d commands (%v)", exe, strings.Join(args, " "), n, jsonlCommands, err)
	}
	return d, nil
}

// countVerdicts counts the JSON objects in check --jsonl output; a line
// that is not one is an error.
func countVerdicts(out *bytes.Buffer) (int, error) {
	n := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, maxVerdictLine)
	for sc.Scan() {
		var v struct {
			Command *string `json:"command"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil || v.Command == nil {
			return n, fmt.Errorf("line %d is not a verdict: %.80q", n+1, sc.Text())
		}
		n++
	}
	return n, sc.Err()
}
