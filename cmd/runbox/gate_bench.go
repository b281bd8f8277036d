package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/runbox/runbox/approval"
)

// benchJSONLCommands is how many commands one run of gate.check.jsonl
// feeds runbox check --jsonl: enough that the process start is a small
// part of a run, as it is for a caller with a batch to judge.
const benchJSONLCommands = 5000

// benchGateCases are the command gate's measurements of `runbox bench`:
//
//   - gate.check: each command of a mixed corpus checked one by one in
//     this process, each check timed on its own: p50 and p99 are per
//     command, against parsing the same command alone;
//   - gate.check.jsonl: `runbox check --jsonl` (this executable) run end
//     to end over benchJSONLCommands commands drawn from the corpus,
//     process start included, against the same executable only parsing
//     them (check --jsonl --parse-only). p50 and p99 are per command (a
//     run's time over its commands), per_second is commands a second at
//     the p50 (the baseline's is 1000 / baseline_p50_ms).
func benchGateCases(a *app) []benchCase {
	return []benchCase{
		{name: "gate.check", backend: "approval", baseline: "shell parse only", n: 20,
			custom: func(ctx context.Context, p benchParams) (measurement, error) { return benchGate(ctx, a.getenv, p.n) }},
		{name: "gate.check.jsonl", backend: "approval", baseline: "check --jsonl --parse-only", n: 3, maxN: 50,
			custom: func(ctx context.Context, p benchParams) (measurement, error) { return benchGateJSONL(ctx, p) }},
	}
}

// benchGateCorpus is what the gate is measured on: the sample of commands
// agents really run (builds, tests, git, greps, package installs, pipes,
// loops, here-documents) and every example of every rule (deletes,
// force pushes, pipes into a shell, code run through wrappers and
// strings, writes to protected paths): the commands the gate must work
// hardest on, next to the ones it sees most.
func benchGateCorpus() []string {
	return append(approval.SampleCommands(), approval.RuleExamples()...)
}

// benchGate times rounds passes over the corpus, each command on its own,
// through a gate with the default policy, then the same for the parser.
func benchGate(ctx context.Context, getenv func(string) string, rounds int) (measurement, error) {
	gate, err := approval.New(approval.Options{Protect: approval.DefaultProtection(getenv)})
	if err != nil {
		return measurement{}, err
	}
	cmds := benchGateCorpus()
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
			return measurement{}, err
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
	return measurement{
		Name: "gate.check", Backend: "approval", N: len(opT),
		P50ms: quantile(opT, 0.5), P99ms: quantile(opT, 0.99),
		Baseline: "shell parse only", BaselineP50ms: quantile(baseT, 0.5),
		PerSecond: float64(len(opT)) / total.Seconds(),
	}, nil
}

// benchGateJSONL runs this executable's check --jsonl over a large input,
// and the same with --parse-only, p.n times each.
func benchGateJSONL(ctx context.Context, p benchParams) (measurement, error) {
	exe, err := os.Executable()
	if err != nil {
		return measurement{}, fmt.Errorf("finding this executable: %w", err)
	}
	corpus := benchGateCorpus()
	var in bytes.Buffer
	for i := range benchJSONLCommands {
		b, _ := json.Marshal(corpus[i%len(corpus)])
		in.Write(b)
		in.WriteByte('\n')
	}
	run := func(ctx context.Context, args ...string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdin = bytes.NewReader(in.Bytes())
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w: %s", exe, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		if n, err := countVerdicts(&out); err != nil || n != benchJSONLCommands {
			return 0, fmt.Errorf("%s %s: answered %d of %d commands (%v)", exe, strings.Join(args, " "), n, benchJSONLCommands, err)
		}
		return d, nil
	}
	runs := func(args ...string) ([]time.Duration, error) {
		var ds []time.Duration
		for i := range p.n + 1 {
			p.progress.step("gate.check.jsonl "+strings.Join(args, " "), i, p.n)
			d, err := run(ctx, args...)
			if err != nil {
				return nil, err
			}
			if i > 0 { // the first run warms the page cache
				ds = append(ds, d/benchJSONLCommands)
			}
		}
		return ds, nil
	}
	opT, err := runs("check", "--jsonl")
	if err != nil {
		return measurement{}, err
	}
	baseT, err := runs("check", "--jsonl", "--parse-only")
	if err != nil {
		return measurement{}, fmt.Errorf("baseline: %w", err)
	}
	return measurement{
		Name: "gate.check.jsonl", Backend: "approval", N: p.n * benchJSONLCommands,
		P50ms: quantile(opT, 0.5), P99ms: quantile(opT, 0.99),
		Baseline: "check --jsonl --parse-only", BaselineP50ms: quantile(baseT, 0.5),
		PerSecond: 1 / (quantile(opT, 0.5) / 1000),
	}, nil
}

// countVerdicts counts the JSON objects in check --jsonl output; a line
// that is not one is an error.
func countVerdicts(out *bytes.Buffer) (int, error) {
	n := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, maxJSONLLine)
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
