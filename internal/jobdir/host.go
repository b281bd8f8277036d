package jobdir

import (
	"path/filepath"
)

// The supervisor host of a state directory (internal/supervisor's
// host.go) lives in <state>/host/: it listens on HostSocket, holds
// HostLock (a flock) while it runs, and writes its own messages to
// HostLog. The registry creates the directory (0700) and starts the
// host; a job's first stage finds the socket from its job directory.
const (
	HostDir    = "host"      // under the state directory
	HostSocket = "host.sock" // the host's socket: one HostRequest per connection
	HostLock   = "host.lock" // flocked by the running host
	HostLog    = "host.log"  // the host's own stderr
)

// StateOf is the state directory of the job directory dir
// (<state>/jobs/<id>).
func StateOf(dir string) string { return filepath.Dir(filepath.Dir(dir)) }

// HostSocketOf is the host socket of the state directory state.
func HostSocketOf(state string) string { return filepath.Join(state, HostDir, HostSocket) }

// HostRequest asks the host to supervise the job in Dir. The first stage
// sends it: it was started through the backend, so Env and Cwd are the
// job's child environment and working directory, which the host gives the
// job's wrapper as they are (they are never on an argv, nor in the
// host's own environ). Path and Argv are the command as the first stage
// resolved it with that environment.
type HostRequest struct {
	Dir  string   `json:"dir"`
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd,omitempty"`
}

// HostResponse answers a HostRequest once the job runs (pid.json is
// written) or its start failure is recorded (OK); or says that the host
// cannot hold this job (Fallback, why), and the first stage then
// supervises it in a process of its own; or that the request itself was
// wrong (Error).
type HostResponse struct {
	OK       bool   `json:"ok,omitempty"`
	Fallback string `json:"fallback,omitempty"`
	Error    string `json:"error,omitempty"`
}

// MaxHostRequest bounds a HostRequest (its environment, mostly).
const MaxHostRequest = 8 << 20
