package envs

import (
	"fmt"
	"github.com/runbox/runbox/undo"
	"io"
	"slices"
	"time"
)

// DefaultOutputLimit is the captured-output bound used when
// [Command.OutputLimit] is zero.
const DefaultOutputLimit = 256 << 10

// Command describes one command to run. Exactly one of Shell and Args is set.
type Command struct {
	// Shell is a shell string, run by the environment's shell with its
	// session state (cwd, exported variables, functions, aliases).
	Shell string `json:"shell,omitempty"`
	// Args is an argv, run without a shell. Args[0] is looked up in PATH.
	Args []string `json:"args,omitempty"`
	// Dir overrides the working directory for this command only.
	// Empty means the session's current directory.
	Dir string `json:"dir,omitempty"`
	// Env is laid over the environment's child environment (built by spawn).
	// Nil adds nothing.
	Env map[string]string `json:"env,omitempty"`
	// Stdin is the command's standard input. Nil means /dev/null
	// (so nothing waits for a terminal that is not there).
	Stdin io.Reader `json:"-"`
	// Timeout bounds the command. Zero means no limit beyond the context.
	// When it expires the command's tree is killed and the result has
	// exit code 124 and TimedOut set.
	Timeout time.Duration `json:"timeout,omitempty"`
	// PTY, when non-nil, runs the command on a pseudo-terminal of that size.
	// Output is then one stream (a terminal has no separate stderr).
	PTY *WindowSize `json:"pty,omitempty"`
	// OutputLimit bounds the captured output in bytes (per stream when
	// SeparateStreams). Zero means [DefaultOutputLimit]; negative means
	// no limit (everything is kept in memory).
	OutputLimit int `json:"output_limit,omitempty"`
	// SeparateStreams captures stderr apart from stdout. By default both are
	// interleaved in arrival order into one stream.
	SeparateStreams bool `json:"separate_streams,omitempty"`
	// Limits caps the command's resources where the backend can enforce
	// them (see [CapLimits]). Nil means the environment's defaults.
	Limits *Limits `json:"limits,omitempty"`
	// Private marks a shell command whose text holds secret values (a
	// caller's shell expanded a token into it): the backend keeps the text
	// out of every argv, where ps and /proc show it to other users (the
	// local backend hands it to the shell in a private file). False lets
	// a backend pass the text as an argument; it still does not for text
	// that holds a value its own child-environment build withheld.
	Private bool `json:"private,omitempty"`
}

// WindowSize is a terminal size.
type WindowSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Limits caps a command's resources. Zero fields mean "no limit".
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	Pids        int64   `json:"pids,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
}

// IsZero reports whether no limit is set.
func (l *Limits) IsZero() bool { return l == nil || *l == Limits{} }

// Validate checks that exactly one of Shell and Args is given.
func (c *Command) Validate() error {
	switch {
	case c.Shell == "" && len(c.Args) == 0:
		return fmt.Errorf("%w: neither a shell string nor an argv", ErrBadCommand)
	case c.Shell != "" && len(c.Args) > 0:
		return fmt.Errorf("%w: both a shell string and an argv", ErrBadCommand)
	case len(c.Args) > 0 && c.Args[0] == "":
		return fmt.Errorf("%w: empty program name", ErrBadCommand)
	}
	return nil
}

// Limit returns the effective output limit (see OutputLimit).
func (c *Command) Limit() int {
	if c.OutputLimit == 0 {
		return DefaultOutputLimit
	}
	return c.OutputLimit
}

// Result is a finished command.
type Result struct {
	ExitStatus
	// Output is stdout and stderr interleaved (or stdout alone with
	// SeparateStreams), bounded as the package doc says. Bytes are not
	// re-encoded: it may hold invalid UTF-8.
	Output string `json:"output"`
	// Stderr is set only with SeparateStreams.
	Stderr string `json:"stderr,omitempty"`
	// Truncated is true when output was cut; SpillPath then names a
	// private file with the whole stream (StderrSpillPath for stderr).
	Truncated       bool   `json:"truncated"`
	SpillPath       string `json:"spill_path,omitempty"`
	StderrSpillPath string `json:"stderr_spill_path,omitempty"`
	// TotalBytes counts every byte the command wrote (both streams).
	TotalBytes int64 `json:"total_bytes"`
	// Cwd is the session's working directory after the command.
	Cwd string `json:"cwd,omitempty"`
	// Duration is the wall time from start to exit.
	Duration time.Duration `json:"duration_ns"`
	// Warnings are things the user should know that did not fail the
	// command (a deleted cwd replaced by its ancestor, a degraded capability).
	Warnings []string `json:"warnings,omitempty"`
	// EnvironmentRecreated is true when the backend had to recreate the
	// environment (a vanished container) before running this command.
	EnvironmentRecreated bool `json:"environment_recreated,omitempty"`
	// Sandbox is the sandbox profile the command ran under (workspace,
	// read-only, off); empty when the backend does not confine commands.
	Sandbox string `json:"sandbox,omitempty"`
	// SandboxViolations are the accesses the sandbox denied the command,
	// as far as its output shows them.
	SandboxViolations []Violation `json:"sandbox_violations,omitempty"`
	// Changes is what the command changed in its workspace, when the
	// session records changes (see package undo); nil otherwise.
	Changes *undo.Record `json:"changes,omitempty"`
}

// Violation is one access a sandbox denied a command.
type Violation struct {
	// Op is read, write, exec, connect, domain, signal or ptrace; or
	// OpMore, last in a list that stops short (Target says how many
	// more were denied).
	Op string `json:"op"`
	// Target is the path, host:port or process.
	Target string `json:"target"`
	// Rule is the part of the sandbox's policy that denied it.
	Rule string `json:"rule"`
	// Source says how runbox knows: SourceDecided or SourcePrinted.
	Source string `json:"source,omitempty"`
}

// How a violation is known.
const (
	// SourceDecided: runbox (or its proxy) made the refusal itself, so
	// it is exact: the command can neither forge nor hide it.
	SourceDecided = "decided"
	// SourcePrinted: read from the command's output (the kernel refused
	// a file access and the program printed it). A command can print a
	// refusal it never met, or silence one it met.
	SourcePrinted = "printed"
)

// OpMore is the Op of the entry that ends a list of violations cut
// short: a command that is denied the same thing a hundred thousand
// ways gets its first ones listed and the rest counted.
const OpMore = "more"

// Denier is a Process whose sandbox reports what it denied the process
// as it decided it (exact, whatever the process printed): the local
// backend's processes under a network allowlist, for the connects.
type Denier interface {
	SandboxDenials() []Violation
}

// MergeViolations is first followed by those of more whose operation and
// target first does not already name.
func MergeViolations(first, more []Violation) []Violation {
	out := slices.Clone(first)
	for _, v := range more {
		if !slices.ContainsFunc(out, func(d Violation) bool { return d.Op == v.Op && d.Target == v.Target }) {
			out = append(out, v)
		}
	}
	return out
}
