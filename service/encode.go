package service

import (
	"encoding/base64"
	"errors"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/runbox/runbox/envs"
)

// ResultJSON is the stable JSON form of a result (`runbox run --json`,
// the server's tool results). JSON strings hold only valid UTF-8, so
// output that is not (binary) is sent as base64 and marked in
// output_encoding / stderr_encoding rather than silently altered.
type ResultJSON struct {
	*envs.Result
	Output         string `json:"output"`
	OutputEncoding string `json:"output_encoding,omitempty"`
	Stderr         string `json:"stderr,omitempty"`
	StderrEncoding string `json:"stderr_encoding,omitempty"`
	// SandboxHint says how to allow what the sandbox refused, when it
	// refused a write (SandboxHint); a refused host's rule says it
	// itself.
	SandboxHint string `json:"sandbox_hint,omitempty"`
}

// EncodeResult returns res's JSON form.
func EncodeResult(res *envs.Result) ResultJSON {
	r := ResultJSON{Result: res, SandboxHint: SandboxHint(res.SandboxViolations)}
	r.Output, r.OutputEncoding = textOrBase64(res.Output)
	r.Stderr, r.StderrEncoding = textOrBase64(res.Stderr)
	return r
}

func textOrBase64(s string) (string, string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), "base64"
}

// ErrorJSON is the stable JSON form of a failure before or instead of a
// result: what went wrong, the exit code runbox exits with, and, for a
// refusal by the gate, its decision and reasons.
type ErrorJSON struct {
	Error    string        `json:"error"`
	ExitCode int           `json:"exit_code"`
	Kind     string        `json:"kind"`
	Decision envs.Decision `json:"decision,omitempty"`
	Hardline bool          `json:"hardline,omitempty"`
	Reasons  []string      `json:"reasons,omitempty"`
	Known    []string      `json:"known_backends,omitempty"`
}

// Error kinds, for callers that branch without parsing the message.
const (
	KindDenied         = "denied"
	KindUnknownBackend = "unknown_backend"
	KindNotFound       = "not_found"
	KindClosed         = "closed"
	KindUnsupported    = "unsupported"
	KindBadCommand     = "bad_command"
	KindLimit          = "limit"
	KindBadDir         = "bad_dir" // the working directory cannot be entered
	KindUsage          = "usage"   // bad flags or arguments (exit 2)
	KindExit           = "exit"
	KindInternal       = "internal"
)

// EncodeError returns err's JSON form; code is the exit status the front
// end reports for it.
func EncodeError(err error, code int) ErrorJSON {
	e := ErrorJSON{Error: strings.TrimPrefix(Message(err), "runbox: "), ExitCode: code, Kind: KindInternal}
	var de *envs.DeniedError
	var ub *envs.UnknownBackendError
	var dirErr *envs.DirError
	var ee *envs.ExitError
	switch {
	case errors.As(err, &de):
		e.Kind, e.Decision, e.Hardline, e.Reasons = KindDenied, de.Decision, de.Hardline, de.Reasons
	case code == 2:
		e.Kind = KindUsage
	case errors.As(err, &dirErr):
		e.Kind = KindBadDir
	case errors.As(err, &ub):
		e.Kind, e.Known = KindUnknownBackend, ub.Known
	case errors.As(err, &ee):
		e.Kind = KindExit
	case errors.Is(err, envs.ErrNotFound):
		e.Kind = KindNotFound
	case errors.Is(err, envs.ErrClosed):
		e.Kind = KindClosed
	case errors.Is(err, envs.ErrUnsupported):
		e.Kind = KindUnsupported
	case errors.Is(err, envs.ErrBadCommand):
		e.Kind = KindBadCommand
	case errors.Is(err, ErrLimit):
		e.Kind = KindLimit
	}
	return e
}

// SandboxHint says how to let commands make the writes among vs that the
// sandbox refused because of where they are (outside the workspace, or
// anywhere under the read-only profile); "" when there are none. The
// network's refusals carry their own ("add it under
// sandbox.network.allow").
func SandboxHint(vs []envs.Violation) string {
	var dirs []string
	readOnly := false
	for _, v := range vs {
		if v.Op != "write" || v.Rule != "outside the workspace" && v.Rule != "read-only profile" {
			continue
		}
		readOnly = readOnly || v.Rule == "read-only profile"
		if d := path.Dir(v.Target); !slices.Contains(dirs, d) && len(dirs) < 3 {
			dirs = append(dirs, d)
		}
	}
	if dirs == nil {
		return ""
	}
	h := "to let commands write there, add the directory (" + strings.Join(dirs, ", ") + ") under sandbox.writable in runbox's configuration"
	if readOnly {
		h += ", use the workspace profile (--sandbox workspace) to write the workspace,"
	}
	return h + ", or run without the sandbox (--sandbox off, or sandbox.profile: off)"
}
