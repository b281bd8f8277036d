package service

import (
	"encoding/base64"
	"errors"
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
}

// EncodeResult returns res's JSON form.
func EncodeResult(res *envs.Result) ResultJSON {
	r := ResultJSON{Result: res}
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
// result (`runbox run --json` when the command could not run): what went
// wrong, the exit code, and, for a refusal by the gate, its verdict.
type ErrorJSON struct {
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
	// Denied is set when the command gate refused the command.
	Denied *DeniedJSON `json:"denied,omitempty"`
}

// DeniedJSON is the gate's verdict in an [ErrorJSON].
type DeniedJSON struct {
	Decision string   `json:"decision"`
	Hardline bool     `json:"hardline"`
	Reasons  []string `json:"reasons"`
}

// EncodeError returns err's JSON form; code is the exit status the front
// end reports for it.
func EncodeError(err error, code int) ErrorJSON {
	e := ErrorJSON{ExitCode: code, Error: strings.TrimPrefix(Message(err), "runbox: ")}
	var de *envs.DeniedError
	if errors.As(err, &de) {
		e.Denied = &DeniedJSON{Decision: de.Decision, Hardline: de.Hardline, Reasons: de.Reasons}
	}
	return e
}
