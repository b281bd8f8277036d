package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/cmd/internal/bench"
)

// benchTempDir gives the bench a private TMPDIR: its state directories
// are made there, so every process it starts names that directory on its
// command line (the supervisors and the jobs' wrappers), and the test can
// find exactly its own.
func benchTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Setenv("GORACE", "atexit_sleep_ms=0") // supervisors are this race-built binary
	return dir
}

// processesNaming lists the live processes whose command line contains s,
// other than this one.
func processesNaming(s string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue // exited; only its parent's wait is missing
			}
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

// supervisorsUnder counts the live jobs whose directory is in dir, by
// their wrappers (which name the job's exitcode file): jobs share one
// supervisor host.
func supervisorsUnder(dir string) int {
	n := 0
	for _, p := range processesNaming(dir) {
		if strings.Contains(p, "/exitcode ") {
			n++
		}
	}
	return n
}

// requireNoBenchLeftovers fails if any process started for dir still
// runs, or a bench state directory is left in it.
func requireNoBenchLeftovers(t *testing.T, dir string) {
	t.Helper()
	if left := processesNaming(dir); len(left) > 0 {
		t.Errorf("processes left running by the bench:\n%s", strings.Join(left, "\n"))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "runbox-bench-jobs-*")); len(m) > 0 {
		t.Errorf("state directories left by the bench: %v", m)
	}
}

// A chosen measurement at a chosen scale prints one JSON object in the
// fixed format, and leaves nothing behind.
func TestBench_OnlyScaleJSON(t *testing.T) {
	dir := benchTempDir(t)
	out, errs, code := cli(t, "", nil, "bench", "--only", "jobs.idle", "--scale", "5", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("bench printed %d lines; want one measurement:\n%s", len(lines), out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, lines[0])
	}
	for _, k := range []string{"name", "backend", "n", "p50_ms", "p99_ms", "baseline", "baseline_p50_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("measurement lacks %q: %s", k, lines[0])
		}
	}
	if m["name"] != "jobs.idle" || m["backend"] != "local" || m["n"] != 5.0 || m["note"] == nil {
		t.Errorf("measurement = %s", lines[0])
	}
	// What an idle job costs beside its command: a share of the host
	// and a /bin/sh wrapper, well under a supervisor of its own (MBs).
	if kib, ok := m["per_job_pss_kib"].(float64); !ok || kib <= 0 {
		t.Errorf("per_job_pss_kib = %v; want a positive size: %s", m["per_job_pss_kib"], lines[0])
	}
	if errs != "" {
		t.Errorf("stderr is not a terminal, yet the bench wrote to it: %q", errs)
	}
	requireNoBenchLeftovers(t, dir)
}

// An unknown measurement name is a usage error that lists the valid ones.
func TestBench_UnknownOnly(t *testing.T) {
	_, errs, code := cli(t, "", nil, "bench", "--only", "jobs.idel")
	if code != exitUsage {
		t.Errorf("exit %d; want %d", code, exitUsage)
	}
	for _, want := range []string{"jobs.idel", "true", "gate.check", "gate.check.jsonl", "jobs.throughput", "jobs.idle", "docker-exec-true", "docker-create-to-first-command"} {
		if !strings.Contains(errs, want) {
			t.Errorf("error does not mention %q: %q", want, errs)
		}
	}
}

// Cancelling a bench while it starts jobs stops it, and on the way out it
// kills every job it started and removes its state directory. Breaks if
// a loop ignores ctx or an exit path skips the cleanup.
func TestBench_CancelCleansUp(t *testing.T) {
	dir := benchTempDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errb, func(k string) string {
		if k == "XDG_CONFIG_HOME" || k == "RUNBOX_CONFIG" || k == "HOME" {
			return ""
		}
		return os.Getenv(k)
	})
	done := make(chan error, 1)
	go func() { done <- a.execute(ctx, []string{"bench", "--only", "jobs.idle", "--scale", "500"}) }()
	deadline := time.Now().Add(60 * time.Second)
	for supervisorsUnder(dir) < 3 {
		select {
		case err := <-done:
			t.Fatalf("the bench ended before it was cancelled: %v\n%s", err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the bench started no jobs")
		}
		<-time.After(10 * time.Millisecond) // poll interval, bounded by deadline
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled bench returned %v; want context.Canceled", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the bench did not stop after its ctx was cancelled")
	}
	if strings.Contains(out.String(), "jobs.idle") {
		t.Errorf("a cancelled measurement was printed: %q", out.String())
	}
	requireNoBenchLeftovers(t, dir)
}

// The same through a real process and a real Ctrl-C: SIGINT to runbox
// bench ends it with 130 and leaves no supervisor behind.
func TestBench_SIGINTCleansUp(t *testing.T) {
	dir := benchTempDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "bench", "--only", "jobs.idle", "--scale", "500")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for supervisorsUnder(dir) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("the bench started no jobs: %s", errb.String())
		}
		<-time.After(10 * time.Millisecond) // poll interval, bounded by deadline
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatal("the bench did not stop at SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d after SIGINT; want %d (stderr %q)", code, 128+int(syscall.SIGINT), errb.String())
	}
	requireNoBenchLeftovers(t, dir)
}

// The throughput measurement runs a job to its end and reports bytes per
// second against its baseline.
func TestBench_Throughput(t *testing.T) {
	dir := benchTempDir(t)
	out, errs, code := cli(t, "", nil, "bench", "--only", "jobs.throughput", "-n", "1", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	var m bench.Measurement
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.Name != "jobs.throughput" || m.N != 1 || m.PerSecond <= 0 || m.BaselineP50ms <= 0 {
		t.Errorf("measurement = %q (%v)", out, err)
	}
	requireNoBenchLeftovers(t, dir)
}

// The table a person reads has a RATIO column: runbox's p50 over its
// baseline's, measured in the same run.
func TestBench_TableShowsRatio(t *testing.T) {
	benchTempDir(t)
	out, errs, code := cli(t, "", nil, "bench", "--only", "true", "-n", "3")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "RATIO") {
		t.Fatalf("table = %q", out)
	}
	if !regexp.MustCompile(`^true\s+local\s+3\s.*\s\d+\.\d\dx\s`).MatchString(lines[1]) {
		t.Errorf("row lacks the ratio: %q", lines[1])
	}
	js, _, _ := cli(t, "", nil, "bench", "--only", "true", "-n", "3", "--json")
	var m bench.Measurement
	if err := json.Unmarshal([]byte(js), &m); err != nil || m.Ratio <= 0 || math.Abs(m.Ratio-m.P50ms/m.BaselineP50ms) > 1e-9 {
		t.Errorf("--json ratio: %v %+v", err, m)
	}
}
