package procregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/termination"
)

// Files of a job's directory (<state>/jobs/<id>/). Each has one writer:
// the registry writes job.json, kill.json and lost.json, the supervisor
// writes pid.json, exit.json and startfail.json (the registry writes
// exit.json instead only once the supervisor is dead: see orphan.go), the
// job's wrapper writes exitcode, and the command itself writes
// output.log. Every JSON file is written whole to a temporary name and
// renamed, so a reader sees the old version or the new one, never half.
const (
	fileJob       = "job.json"       // the record: spec, owner, notes
	fileLog       = "output.log"     // every byte of output, appended
	filePID       = "pid.json"       // supervisor and command identities
	fileExit      = "exit.json"      // the command's exit status
	fileStartFail = "startfail.json" // why the command could not start
	fileKill      = "kill.json"      // who asked for the kill
	fileLost      = "lost.json"      // why the registry gave the job up
	fileCtl       = "ctl.sock"       // the supervisor's control socket
	fileSupLog    = "supervisor.log" // the supervisor's own stderr
	fileExitCode  = "exitcode"       // the command's exit code, from its wrapper
	fileCommand   = "command.sh"     // the command, when job.json shows a redacted copy
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

// Lifetime says whether a job ends with its owner's session.
type Lifetime string

const (
	// LifetimeSession (the zero value) ends the job when its owner's
	// session ends ([Registry.EndSession]). It is the default because a
	// forgotten job that outlives everyone is the costlier mistake.
	LifetimeSession Lifetime = ""
	// LifetimeDetached keeps the job running after its owner's session.
	LifetimeDetached Lifetime = "detached"
)

// Note is one ownership change.
type Note struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Note string    `json:"note,omitempty"`
	Time time.Time `json:"time"`
}

// record is job.json.
type record struct {
	ID        string            `json:"id"`
	Owner     string            `json:"owner"`
	Shell     string            `json:"shell,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Dir       string            `json:"dir,omitempty"`
	PTY       *envs.WindowSize  `json:"pty,omitempty"`
	Notify    bool              `json:"notify,omitempty"`
	Watch     []string          `json:"watch,omitempty"`
	Heartbeat time.Duration     `json:"heartbeat,omitempty"`
	Key       string            `json:"key,omitempty"`
	Lifetime  Lifetime          `json:"lifetime,omitempty"`
	Created   time.Time         `json:"created"`
	Notes     []Note            `json:"notes,omitempty"`
	EnvNames  []string          `json:"env_names,omitempty"` // names only: values may be secrets
	// Display replaces Shell and Args on disk when the command held a
	// secret value; the command is then in fileCommand (see writeRecord).
	Display  string   `json:"display,omitempty"`
	Redacted []string `json:"redacted,omitempty"`
	Limits    *envs.Limits      `json:"limits,omitempty"`
	Extra     map[string]string `json:"extra,omitempty"`
}

// pidRecord is pid.json, written by the supervisor once the command runs.
type pidRecord struct {
	Supervisor termination.Proc `json:"supervisor"`
	// Command is the job's command itself: what a kill signals first.
	Command termination.Proc `json:"command"`
	// Wrapper is the supervisor's child that runs the command and writes
	// its exit code to the exitcode file (see wrapper.go); zero when the
	// job runs without one (no /bin/sh), or for a job started before
	// wrappers existed.
	Wrapper termination.Proc `json:"wrapper,omitzero"`
	// Copier is the process that copies a PTY job's terminal into its
	// log (ptycopy.go); zero for a pipe job, or when the supervisor copies.
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
}

// exitRecord is exit.json, written by the supervisor after the command
// was reaped.
type exitRecord struct {
	Status envs.ExitStatus `json:"status"`
	Ended  time.Time       `json:"ended"`
	// Note says how the exit was learned when it was not from the
	// supervisor (its wrapper's exitcode file, after the supervisor died).
	Note string `json:"note,omitempty"`
}

// failRecord is startfail.json.
type failRecord struct {
	Error  string          `json:"error"`
	Status envs.ExitStatus `json:"status"`
	Time   time.Time       `json:"time"`
}

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
	Status    Status        `json:"status"`
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

// writeJSON writes v to path atomically: to a new temporary file beside
// it (created with O_EXCL, so nothing planted there is followed), synced,
// then renamed over path (which replaces a link at path, never follows
// it).
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("procregistry: write %s: %w", filepath.Base(path), err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("procregistry: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// maxRecord bounds the size of a JSON record read from a job directory.
const maxRecord = 16 << 20

// readJSON reads path into v. A missing file is (false, nil). A symbolic
// link, or anything but a regular file of this user, is an error
// ([ErrUnsafeStateDir]) and is not read.
func readJSON(path string, v any) (bool, error) {
	f, err := OpenPrivateFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("procregistry: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return false, fmt.Errorf("procregistry: %w", err)
	}
	if len(b) > maxRecord {
		return false, fmt.Errorf("procregistry: %s: larger than %d bytes", path, maxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("procregistry: %s: %w", path, err)
	}
	return true, nil
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
