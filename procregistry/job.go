package procregistry

import (
	"fmt"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/jobdir"
)

// Status is where a job is in its life. It is a closed set.
type Status string

const (
	// StatusStarting: the supervisor is being launched.
	StatusStarting Status = "starting"
	// StatusRunning: the command runs (with or without its supervisor:
	// a job whose supervisor died is running while its processes live).
	StatusRunning Status = "running"
	// StatusExited: the command ended by itself (any exit code or signal
	// not asked for through the registry).
	StatusExited Status = "exited"
	// StatusKilled: the command ended after a kill through the registry
	// (Kill, or the end of its owner's session).
	StatusKilled Status = "killed"
	// StatusLost: the command's end cannot be known: its supervisor and
	// its wrapper both died without recording the exit, and its processes
	// are gone; or a recorded PID now names another program.
	StatusLost Status = "lost"
	// StatusFailed: the command never ran (no such program, a working
	// directory that cannot be entered, no supervisor).
	StatusFailed Status = "failed"
)

// Finished reports whether s is a final status.
func (s Status) Finished() bool { return s != StatusStarting && s != StatusRunning && s != "" }

// Reason says why a job completed, in a completion [Event].
type Reason string

const (
	ReasonExited        Reason = "exited"
	ReasonKilled        Reason = "killed"
	ReasonLost          Reason = "lost"
	ReasonFailedToStart Reason = "failed_to_start"
	// ReasonNoOutputTimeout: the job was ended by its NoOutputTimeout
	// (its status is killed, KilledBy [KilledByNoOutput]).
	ReasonNoOutputTimeout Reason = "no_output_timeout"
)

func (s Status) reason() Reason {
	switch s {
	case StatusKilled:
		return ReasonKilled
	case StatusLost:
		return ReasonLost
	case StatusFailed:
		return ReasonFailedToStart
	}
	return ReasonExited
}

// Lifetime is a job's class: what it outlives, and what it keeps.
type Lifetime string

const (
	// LifetimeSession (the zero value; "session" is read as it) ends the
	// job when its owner's session ends ([Registry.EndSession]). It is
	// the default because a forgotten job that outlives everyone is the
	// costlier mistake.
	LifetimeSession Lifetime = ""
	// LifetimeCommand ends the job with the command that started it: a
	// command that yields is one until it yields (see service's
	// StartYield), so a caller that goes away before then takes it
	// along, as a foreground command's does. A session's end ends it too.
	LifetimeCommand Lifetime = "command"
	// LifetimeDetached keeps the job running after its owner's session,
	// until it ends or is killed.
	LifetimeDetached Lifetime = "detached"
	// LifetimeKeepAwake is detached, and while it runs the sandbox it
	// runs in counts as in use: idle timeouts (a serve session's, the
	// task reaper's) do not stop or reap it.
	LifetimeKeepAwake Lifetime = "keep-awake"
)

// LifetimeNames are the classes by the names users type, in the order
// help lists them.
func LifetimeNames() []string { return []string{"command", "session", "detached", "keep-awake"} }

// ParseLifetime reads a class by its name ("" and "session" are
// LifetimeSession). An unknown name matches envs.ErrBadCommand.
func ParseLifetime(s string) (Lifetime, error) {
	switch l := Lifetime(s); l {
	case LifetimeSession, "session":
		return LifetimeSession, nil
	case LifetimeCommand, LifetimeDetached, LifetimeKeepAwake:
		return l, nil
	}
	return "", fmt.Errorf("procregistry: lifetime %q: %w: want one of %s", s, envs.ErrBadCommand, strings.Join(LifetimeNames(), ", "))
}

// String is the class's name ("session" for the zero value).
func (l Lifetime) String() string {
	if l == LifetimeSession {
		return "session"
	}
	return string(l)
}

// EndsWithSession reports whether the owner's session's end ends the job.
func (l Lifetime) EndsWithSession() bool { return l == LifetimeSession || l == LifetimeCommand }

// KeepsAwake reports whether the job, while it runs, keeps its sandbox
// from idle timeouts.
func (l Lifetime) KeepsAwake() bool { return l == LifetimeKeepAwake }

// Note is one ownership change.
type Note struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Note string    `json:"note,omitempty"`
	Time time.Time `json:"time"`
}

// record is job.json. Its Spec, the command to run, is all the job's
// supervisor reads of it.
type record struct {
	jobdir.Spec
	Owner     string        `json:"owner"`
	Dir       string        `json:"dir,omitempty"`
	Notify    bool          `json:"notify,omitempty"`
	Watch     []string      `json:"watch,omitempty"`
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	Key       string        `json:"key,omitempty"`
	Lifetime  Lifetime      `json:"lifetime,omitempty"`
	// QuietAfter, InputWait and NoOutputTimeout are the StartRequest's
	// (see quiet.go).
	QuietAfter      time.Duration `json:"quiet_after,omitempty"`
	InputWait       time.Duration `json:"input_wait,omitempty"`
	NoOutputTimeout time.Duration `json:"no_output_timeout,omitempty"`
	Created         time.Time     `json:"created"`
	Notes           []Note        `json:"notes,omitempty"`
	EnvNames        []string      `json:"env_names,omitempty"` // names only: values may be secrets
	// Redacted names what Spec.Display hid (see writeRecord).
	Redacted []string          `json:"redacted,omitempty"`
	Extra    map[string]string `json:"extra,omitempty"`
	// ConfinedCaller says that a confined caller started the job, and
	// whose sandbox it runs in (see "Confined callers"): "" for a job an
	// unconfined caller started, callerUnknownSandbox or
	// callerOwnSandbox.
	ConfinedCaller string `json:"confined_caller,omitempty"`
}

// The values of record.ConfinedCaller.
const (
	// callerUnknownSandbox: the caller's sandbox was not known; the job
	// runs under the strictest one ([Server].StrictPolicy).
	callerUnknownSandbox = "strictest"
	// callerOwnSandbox: the caller was a process of a job the registry
	// confined, under that sandbox alone; the job runs in the same.
	callerOwnSandbox = "caller's"
)

// killRecord is kill.json.
type killRecord struct {
	By   string    `json:"by"`
	Time time.Time `json:"time"`
}

// lostRecord is lost.json.
type lostRecord struct {
	Why  string    `json:"why"`
	Time time.Time `json:"time"`
}

// Info is what the registry tells about a job.
type Info struct {
	ID        string        `json:"id"`
	Owner     string        `json:"owner"`
	Command   string        `json:"command"`
	Dir       string        `json:"dir,omitempty"`
	PTY       bool          `json:"pty,omitempty"`
	Key       string        `json:"key,omitempty"`
	Lifetime  Lifetime      `json:"lifetime,omitempty"`
	Notify    bool          `json:"notify,omitempty"`
	Watch     []string      `json:"watch,omitempty"`
	Heartbeat time.Duration `json:"heartbeat_ns,omitempty"`
	// QuietAfter, InputWait and NoOutputTimeout are the job's idle
	// options (see [StartRequest]); zero when not asked for.
	QuietAfter      time.Duration `json:"quiet_after_ns,omitempty"`
	InputWait       time.Duration `json:"input_wait_ns,omitempty"`
	NoOutputTimeout time.Duration `json:"no_output_timeout_ns,omitempty"`
	Status          Status        `json:"status"`
	// PID is the command's process id (0 before it runs).
	PID int `json:"pid,omitempty"`
	// SupervisorPID is the process id of the job's supervisor (0 before
	// it reports). The job outlives it: see the package documentation,
	// "Crash safety".
	SupervisorPID int       `json:"supervisor_pid,omitempty"`
	Created       time.Time `json:"created"`
	Started       time.Time `json:"started,omitzero"`
	Ended         time.Time `json:"ended,omitzero"`
	// Exit is set once the command's exit status is known (not for lost
	// or failed jobs, whose status nobody saw).
	Exit *envs.ExitStatus `json:"exit,omitempty"`
	// KilledBy names who asked for a kill ("kill", "session-end") for a
	// killed job.
	KilledBy string `json:"killed_by,omitempty"`
	// Error explains a failed or lost job.
	Error string `json:"error,omitempty"`
	// SandboxViolations are the refusals the job's sandbox decided (its
	// connects: exact, see envs.SourceDecided), once it ended.
	SandboxViolations []envs.Violation `json:"sandbox_violations,omitempty"`
	// Containment is how the job's tree is held: a termination.Mechanism
	// name ("systemd-scope", "cgroup-hybrid", ...), or "" when it runs in
	// its process group only (Warning then says why).
	Containment string `json:"containment,omitempty"`
	// Warning reports a degraded start, such as no container, or that the
	// supervisor died (the job then runs on, and its exit is learned from
	// its wrapper).
	Warning string `json:"warning,omitempty"`
	// Size is the log's length in bytes when the Info was made.
	Size  int64  `json:"size"`
	Notes []Note `json:"notes,omitempty"`
}

func (r *record) command() string {
	if r.Display != "" {
		return r.Display
	}
	if r.Shell != "" {
		return r.Shell
	}
	return shellQuote(r.Args)
}

// shellQuote joins argv into one shell string that runs exactly it.
func shellQuote(args []string) string {
	out := make([]byte, 0, 64)
	for i, a := range args {
		if i > 0 {
			out = append(out, ' ')
		}
		if a != "" && isPlain(a) {
			out = append(out, a...)
			continue
		}
		out = append(out, '\'')
		for j := 0; j < len(a); j++ {
			if a[j] == '\'' {
				out = append(out, `'\''`...)
			} else {
				out = append(out, a[j])
			}
		}
		out = append(out, '\'')
	}
	return string(out)
}

func isPlain(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == ':' || c == '=' || c == '+' || c == '@':
		default:
			return false
		}
	}
	return true
}
