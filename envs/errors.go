package envs

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrNotFound: the thing named (a process, a file, a job, a backend) does not exist.
	ErrNotFound = errors.New("envs: not found")
	// ErrClosed: the environment or process was closed.
	ErrClosed = errors.New("envs: closed")
	// ErrUnsupported: the backend lacks the capability the call needs.
	ErrUnsupported = errors.New("envs: unsupported")
	// ErrDenied: the command gate refused the command.
	ErrDenied = errors.New("envs: denied")
	// ErrTimeout is the cancellation cause a backend attaches to a command's
	// own timeout, so it is told apart from the caller's deadline.
	ErrTimeout = errors.New("envs: command timeout")
	// ErrBadCommand: the command is malformed (neither or both of Shell and Args, ...).
	ErrBadCommand = errors.New("envs: bad command")
	// ErrSandboxKilled: the sandbox a command ran in (a container, a pod,
	// a cloud sandbox) was killed, stopped or removed from outside while
	// the command ran — as opposed to its agent dying in a sandbox that
	// still runs. A backend's error type says how (signal, exit code, out
	// of memory) and matches it.
	ErrSandboxKilled = errors.New("envs: sandbox killed")
)

// Decision is the gate's verdict on a command it refused; the JSON form
// is the string.
type Decision string

// The verdicts a DeniedError carries.
const (
	DecisionAsk  Decision = "ask"  // it needed approval, and none could be had
	DecisionDeny Decision = "deny" // refused outright
)

// DeniedError is a refusal by the command gate, with the reasons shown to the user.
type DeniedError struct {
	// Decision is DecisionDeny, or DecisionAsk when asking was not possible.
	Decision Decision
	// Hardline is true when no approval could ever allow the command.
	Hardline bool
	// Reasons are human-readable rule descriptions.
	Reasons []string
}

func (e *DeniedError) Error() string {
	kind := "denied"
	if e.Hardline {
		kind = "denied (hardline)"
	}
	if len(e.Reasons) == 0 {
		return "envs: command " + kind
	}
	return "envs: command " + kind + ": " + strings.Join(e.Reasons, "; ")
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// SurvivorsError reports processes that outlived a whole-tree kill. It is
// returned, never hidden: a caller that gets it knows the teardown failed.
type SurvivorsError struct {
	PIDs []int
}

func (e *SurvivorsError) Error() string {
	pids := append([]int(nil), e.PIDs...)
	sort.Ints(pids)
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf("envs: %d process(es) survived teardown: %s", len(pids), strings.Join(s, ", "))
}

// UnknownBackendError is returned for a backend name that is not in the
// provider table. It lists the known names. It matches ErrNotFound.
type UnknownBackendError struct {
	Name  string
	Known []string
}

func (e *UnknownBackendError) Error() string {
	return fmt.Sprintf("envs: unknown backend %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *UnknownBackendError) Is(target error) bool { return target == ErrNotFound }

// DirError is a working directory that cannot be entered: missing, not a
// directory, or not searchable. Front ends report it with exit status
// [ExitCannotEnter] (126), the status a command that cannot enter its
// directory gets. Err is the cause (an *fs.PathError from the check, for
// instance), so errors.Is(err, fs.ErrNotExist) works through it.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string {
	reason := "not a directory"
	var pe *fs.PathError
	switch {
	case errors.As(e.Err, &pe):
		reason = pe.Err.Error()
	case e.Err != nil:
		reason = e.Err.Error()
	}
	return fmt.Sprintf("envs: cannot enter working directory %s: %s", e.Dir, reason)
}

func (e *DirError) Unwrap() error { return e.Err }
