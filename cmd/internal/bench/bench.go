package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// Host is what the measurements need from the front end that runs them.
type Host struct {
	// Service opens what is measured: sessions, the local, ssh and
	// kubernetes environments (through its provider table), with its
	// configuration (Config: the docker image, the ssh and kubernetes
	// sections) and its environment lookup (Getenv: HOME, SSH_AUTH_SOCK,
	// RUNBOX_KUBECTL, the gate's protected paths). Required.
	Service *service.Service
	// OpenRegistry opens a job registry in stateDir the way the job
	// daemon does (its supervisors are the front end's own program);
	// closing the environment it returns is the caller's. Nil: the job
	// measurements report a note.
	OpenRegistry func(stateDir string) (*procregistry.Registry, envs.Environment, error)
	// Stdout receives the table, or the JSON lines. Required.
	Stdout io.Writer
	// Stderr receives progress, but only when it is an *os.File on a
	// terminal: a pipe, a file or nil gets nothing, so that --json
	// output and logs stay clean.
	Stderr io.Writer
	// Logger receives the docker backend's logs for the containers the
	// docker measurements make. Nil discards them.
	Logger *slog.Logger
}

// SSHTarget is the host of the ssh measurements, with the key and
// host-key policy that the ssh backend and the OpenSSH baseline both use.
// The zero value takes the host from the configuration's ssh section;
// with none there, the ssh measurements report a note.
type SSHTarget struct {
	// Host is [user@]host[:port]. Empty: ssh.host.
	Host string
	// Identity is a private key file, offered by runbox and by the ssh
	// client alike. Empty: the configuration's, then the ssh-agent's.
	Identity string
	// AcceptNewHostKey records the host's key when known_hosts does not
	// list it. False: an unknown host is refused.
	AcceptNewHostKey bool
}

// Options choose what a run measures and how it prints.
type Options struct {
	// JSON prints one [Measurement] per line, as each is taken. False:
	// one table at the end.
	JSON bool
	// N is how many times each operation and its baseline run. Zero:
	// each case's own default (capped for the expensive ones).
	N int
	// Scale is the size of the scale measurements (jobs.idle: how many
	// idle jobs). Zero: each case's own default.
	Scale int
	// Only names the cases to run, in the case table's order whatever
	// order they are named in. Empty: all of them. A name that is no
	// case makes Run fail with an [*UnknownCaseError] before anything
	// is measured.
	Only []string
	// SSH is the host of the ssh measurements.
	SSH SSHTarget
}

// Measurement is one line of `runbox bench --json`: its fields and names
// are fixed (tests and dashboards parse them).
type Measurement struct {
	Name          string  `json:"name"`
	Backend       string  `json:"backend"`
	N             int     `json:"n"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	Baseline      string  `json:"baseline"`
	BaselineP50ms float64 `json:"baseline_p50_ms"`
	// Ratio is P50ms / BaselineP50ms: below 1 runbox beat its baseline.
	// It is 0 where there is no baseline time to compare with.
	Ratio float64 `json:"ratio,omitempty"`
	// PerSecond is set for throughput measurements (operations per second).
	PerSecond float64 `json:"per_second,omitempty"`
	// PerJobPSSKiB is set by jobs.idle: what one idle job adds in memory
	// apart from its own command (its share of the supervisor host, or
	// its own supervisor, plus its wrapper and a PTY job's copier), in KiB
	// of PSS.
	PerJobPSSKiB float64 `json:"per_job_pss_kib,omitempty"`
	// Note explains a measurement that could not be taken.
	Note string `json:"note,omitempty"`
}

// UnknownCaseError is [Options.Only] naming no case. The front end words
// it for its own flag; Valid lists every case, in the table's order.
type UnknownCaseError struct {
	Name  string
	Valid []string
}

func (e *UnknownCaseError) Error() string {
	return fmt.Sprintf("bench: no measurement is named %q; valid names: %s", e.Name, strings.Join(e.Valid, ", "))
}

// Run takes the measurements o selects, in the case table's order, and
// prints them to h.Stdout. A case that cannot be measured here (no
// engine, no host, no cluster) is printed with a note, not returned as an
// error. When ctx ends, Run returns its cause at once, after removing
// every job, state directory and container it made; the measurement cut
// short is not printed.
func Run(ctx context.Context, h Host, o Options) error {
	if err := h.check(o); err != nil {
		return err
	}
	cases, err := selectCases(allCases(h, o.SSH), o.Only)
	if err != nil {
		return err
	}
	run := runID()
	prog := newProgress(h.Stderr)
	defer sweepDocker(cases, run, prog)
	var table []Measurement
	for i, c := range cases {
		prog.say("[%d/%d] %s", i+1, len(cases), c.name)
		m, err := take(ctx, c, c.params(o, run, prog))
		if err != nil {
			return err
		}
		if !o.JSON {
			table = append(table, m)
		} else if err := json.NewEncoder(h.Stdout).Encode(m); err != nil {
			return fmt.Errorf("bench: printing %s: %w", c.name, err)
		}
	}
	if !o.JSON {
		return printTable(h.Stdout, table)
	}
	return nil
}

// check refuses a Host or Options that Run cannot work with.
func (h Host) check(o Options) error {
	switch {
	case h.Service == nil:
		return errors.New("bench: Host.Service is nil")
	case h.Stdout == nil:
		return errors.New("bench: Host.Stdout is nil")
	case o.N < 0:
		return fmt.Errorf("bench: Options.N is %d; want 0 (the defaults) or more", o.N)
	case o.Scale < 0:
		return fmt.Errorf("bench: Options.Scale is %d; want 0 (the defaults) or more", o.Scale)
	}
	return nil
}

// logger is h.Logger, or one that discards.
func (h Host) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// take measures c. A failure becomes the measurement's note, since one
// backend missing here must not hide the others; only the end of ctx is
// returned, and then nothing is printed for c.
func take(ctx context.Context, c caseDef, p params) (Measurement, error) {
	m, err := measure(ctx, c, p)
	if ctx.Err() != nil {
		return Measurement{}, context.Cause(ctx)
	}
	if err != nil {
		m = Measurement{Name: c.name, Backend: c.backend, Baseline: c.baseline, Note: err.Error()}
	}
	m.Ratio = ratio(m.P50ms, m.BaselineP50ms)
	return m, nil
}

// params are the sizes one measurement runs with: the options, or the
// case's own defaults.
type params struct {
	// n is how many times the operation (and its baseline) runs.
	n int
	// scale is the size of a scale measurement (jobs.idle: how many jobs).
	scale int
	// run names this bench run; what a measurement creates outside this
	// process (docker containers) carries it, so the run can sweep it up.
	run string
	// progress reports on stderr when it is a terminal; never nil.
	progress *progress
}

// caseDef is one case of the table: an operation of runbox and the
// baseline it is measured against, each n times in the same run.
type caseDef struct {
	name, backend, baseline string
	// n is the default number of runs; maxN caps the runs of an expensive
	// case (0: no cap).
	n, maxN int
	// scale is the default size of a scale measurement (0: none). The
	// default is small, so that `runbox bench` stays quick; the published
	// numbers come from --only NAME --scale N.
	scale int
	// setup prepares the case; its cleanup runs after the measurement,
	// however it ends.
	setup func(ctx context.Context, p params) (op, base func(ctx context.Context) error, cleanup func(), err error)
	// custom replaces the timed loop (throughput and scale measurements).
	// It cleans up after itself on every return.
	custom func(ctx context.Context, p params) (Measurement, error)
}

// params are c's sizes under o.
func (c caseDef) params(o Options, run string, prog *progress) params {
	p := params{n: cmp.Or(o.N, c.n), scale: cmp.Or(o.Scale, c.scale), run: run, progress: prog}
	if c.maxN > 0 {
		p.n = min(p.n, c.maxN)
	}
	return p
}

// allCases is the case table, in the order a run takes them: the cheap,
// local ones first, then those that need an engine, a host or a cluster.
func allCases(h Host, target SSHTarget) []caseDef {
	var cases []caseDef
	for _, group := range [][]caseDef{
		localCases(h),
		undoCases(h),
		gateCases(h),
		jobCases(h),
		mcpCases(h),
		sshCases(h, target),
		dockerCases(h),
		kubeCases(h),
	} {
		cases = append(cases, group...)
	}
	return cases
}

// selectCases keeps the cases named in only (all of them when only is
// empty), in their own order.
func selectCases(all []caseDef, only []string) ([]caseDef, error) {
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, c := range all {
		names = append(names, c.name)
	}
	for _, o := range only {
		if !slices.Contains(names, o) {
			return nil, &UnknownCaseError{Name: o, Valid: names}
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(c caseDef) bool { return !slices.Contains(only, c.name) }), nil
}

// runID names one bench run, so that what it leaves outside this process
// can be told from another run's.
func runID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
