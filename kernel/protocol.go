package kernel

import "encoding/json"

// frame is one protocol message, in either direction: a JSON object on
// one line. Which fields are set depends on Op.
//
// Host to driver: exec (ID, Code), interrupt (ID), result (Call, OK,
// Value or Error).
// Driver to host: ready (PID, Python), out (ID, Stream, Data as base64),
// call (ID, Call, Tool, Args), done (ID and the cell's outcome).
type frame struct {
	Op   string `json:"op"`
	ID   int64  `json:"id,omitempty"`
	Code string `json:"code,omitempty"`

	// ready
	PID    int    `json:"pid,omitempty"`
	Python string `json:"python,omitempty"`

	// out
	Stream string `json:"stream,omitempty"`
	Data   []byte `json:"data,omitempty"`

	// call and result
	Call  int64           `json:"call,omitempty"`
	Tool  string          `json:"tool,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	OK    bool            `json:"ok,omitempty"`
	Value any             `json:"value,omitempty"`
	Error *toolErrorJSON  `json:"error,omitempty"`

	// done
	Status         Status  `json:"status,omitempty"`
	Result         *string `json:"result,omitempty"`
	EName          string  `json:"ename,omitempty"`
	EValue         string  `json:"evalue,omitempty"`
	Traceback      string  `json:"traceback,omitempty"`
	ExitCode       *int    `json:"exit_code,omitempty"`
	ExecutionCount int     `json:"execution_count,omitempty"`
	Interrupted    bool    `json:"interrupted,omitempty"`
	Duration       float64 `json:"duration,omitempty"`
}

// toolErrorJSON is a failed tool call as the driver receives it.
type toolErrorJSON struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}
