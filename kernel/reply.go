package kernel

import "time"

// Status is how a cell ended.
type Status string

const (
	// StatusOK: the cell ran to its end.
	StatusOK Status = "ok"
	// StatusError: the cell raised (Reply.Traceback says where), or was
	// interrupted (KeyboardInterrupt).
	StatusError Status = "error"
	// StatusExit: the cell called sys.exit (the kernel lives on), or the
	// kernel itself ended or was killed ([Reply.StateLost]).
	StatusExit Status = "exit"
)

// Reply is one cell's outcome.
type Reply struct {
	Status Status `json:"status"`
	// Stdout and Stderr are what the cell wrote to fds 1 and 2 (print,
	// os.write, subprocesses), each bounded like a command's output; over
	// the limit the whole stream is in the spill file.
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	Truncated       bool   `json:"truncated,omitempty"`
	StdoutSpillPath string `json:"stdout_spill_path,omitempty"`
	StderrSpillPath string `json:"stderr_spill_path,omitempty"`
	// Result is repr() of the cell's last expression, when it is one and
	// not None (bounded to 64 KiB).
	Result *string `json:"result,omitempty"`
	// EName, EValue and Traceback describe the exception of an error.
	EName     string `json:"ename,omitempty"`
	EValue    string `json:"evalue,omitempty"`
	Traceback string `json:"traceback,omitempty"`
	// ExitCode is set with StatusExit: sys.exit's code, or the kernel
	// process's exit status.
	ExitCode *int `json:"exit_code,omitempty"`
	// ExecutionCount numbers the cells this kernel has run (from 1; a
	// fresh kernel starts again).
	ExecutionCount int           `json:"execution_count"`
	Duration       time.Duration `json:"duration_ns"`
	// TimedOut: the cell's timeout expired. Interrupted: the cell was
	// interrupted (by the timeout or the caller's context).
	TimedOut    bool `json:"timed_out,omitempty"`
	Interrupted bool `json:"interrupted,omitempty"`
	// StateLost: the kernel ended or was killed during this cell (an
	// interrupt that did not land in time, os._exit, a crash); the next
	// cell starts in a fresh kernel with an empty namespace.
	StateLost bool `json:"state_lost,omitempty"`
	// Restarted: this cell ran in a fresh kernel because the previous one
	// was lost; variables from earlier cells are gone.
	Restarted bool `json:"restarted,omitempty"`
	// Notice says in words what happened to the kernel, when something did.
	Notice string `json:"notice,omitempty"`
}
