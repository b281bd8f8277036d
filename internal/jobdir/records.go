package jobdir

import (
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// Spec is the part of job.json (FileJob) that says what to run; the
// registry's record of a job embeds it, and it is all the job's
// supervisor reads of that file.
type Spec struct {
	ID    string           `json:"id"`
	Shell string           `json:"shell,omitempty"`
	Args  []string         `json:"args,omitempty"`
	PTY   *envs.WindowSize `json:"pty,omitempty"`
	// Display replaces Shell and Args on disk when the command held a
	// secret value; the command is then in FileCommand.
	Display string       `json:"display,omitempty"`
	Limits  *envs.Limits `json:"limits,omitempty"`
	// Confine is the sandbox the command runs under, through the
	// trampoline Confiner (nil: unconfined).
	Confine  *confine.Policy `json:"confine,omitempty"`
	Confiner []string        `json:"confiner,omitempty"`
	// Grace is how long what the command left running when it ended gets
	// after SIGTERM before SIGKILL (zero: SIGKILL at once). The supervisor
	// kills it all as the command ends: a job ends whole.
	Grace time.Duration `json:"grace,omitempty"`
}

// PIDRecord is pid.json, written by the supervisor once the command runs.
type PIDRecord struct {
	Supervisor termination.Proc `json:"supervisor"`
	// Command is the job's command itself: what a kill signals first.
	Command termination.Proc `json:"command"`
	// Wrapper is the supervisor's child that runs the command and writes
	// its exit code to the exitcode file (see internal/supervisor's wrapper.go); zero when the
	// job runs without one (no /bin/sh), or for a job started before
	// wrappers existed.
	Wrapper termination.Proc `json:"wrapper,omitzero"`
	// Copier is the process that copies a PTY job's terminal into its
	// log (internal/supervisor's ptycopy.go); zero for a pipe job, or when the supervisor copies.
	Copier  termination.Proc `json:"copier,omitzero"`
	Started time.Time        `json:"started"`
	// Container is the job's container, for reopening it after the
	// supervisor (or the registry) is gone; nil when the job runs in its
	// process group only.
	Container *termination.ContainerRef `json:"container,omitempty"`
	// Warning says why the job has no container, when it has none.
	Warning string `json:"warning,omitempty"`
	// Subreaper is true when, without a container, the supervisor adopts
	// the job's orphans: its live descendants are then the job's tree.
	Subreaper bool `json:"subreaper,omitempty"`
	// Host is true when Supervisor is the state directory's supervisor
	// host, which supervises many jobs (internal/supervisor's
	// host.go), rather than a process of this job's own. Its death
	// orphans every job it held.
	Host bool `json:"host,omitempty"`
}

// ExitRecord is exit.json, written by the supervisor after the command
// was reaped.
type ExitRecord struct {
	Status envs.ExitStatus `json:"status"`
	Ended  time.Time       `json:"ended"`
	// Note says how the exit was learned when it was not from the
	// supervisor (its wrapper's exitcode file, after the supervisor died).
	Note string `json:"note,omitempty"`
	// Violations are the refusals the job's sandbox decided (its
	// connects), as the supervisor that served its listener saw them.
	Violations []envs.Violation `json:"sandbox_violations,omitempty"`
}

// FailRecord is startfail.json.
type FailRecord struct {
	Error  string          `json:"error"`
	Status envs.ExitStatus `json:"status"`
	Time   time.Time       `json:"time"`
}
