package agent

import (
	"encoding/json"

	"github.com/runbox/runbox/envs"
)

// hello is the first frame each side sends.
type hello struct {
	Version int    `json:"version"`
	Role    string `json:"role"` // "client" or "agent"
	Build   string `json:"build,omitempty"`
	// Caps are the agent's capabilities (agent only).
	Caps map[envs.Capability]wireCap `json:"caps,omitempty"`
	// Cwd is the agent session's initial directory (agent only).
	Cwd string `json:"cwd,omitempty"`
}

type wireCap struct {
	State  int    `json:"state"`
	Detail string `json:"detail,omitempty"`
}

func capsToWire(c envs.Capabilities) map[envs.Capability]wireCap {
	m := make(map[envs.Capability]wireCap, len(c))
	for k, v := range c {
		m[k] = wireCap{State: int(v.State), Detail: v.Detail}
	}
	return m
}

func capsFromWire(m map[envs.Capability]wireCap) envs.Capabilities {
	c := make(envs.Capabilities, len(m))
	for k, v := range m {
		c[k] = envs.CapInfo{State: envs.CapState(v.State), Detail: v.Detail}
	}
	return c
}

// op names a call. A closed set: the agent refuses any other.
type op string

const (
	opRun      op = "run"      // run a command to completion; reply carries the Result
	opStart    op = "start"    // start a streaming process; reply carries the PID
	opCancel   op = "cancel"   // interrupt a running opRun (exit 130)
	opSignal   op = "signal"   // signal a streaming process
	opKill     op = "kill"     // whole-tree kill of a streaming process
	opResize   op = "resize"   // resize a streaming process's PTY
	opRelease  op = "release"  // the client is done with a channel
	opPut      op = "put"      // write stream 0 to a file
	opGet      op = "get"      // read a file into stream 1
	opPing     op = "ping"     // liveness
	opShutdown op = "shutdown" // kill everything still running; the stream ends next

	// The change journal of a workspace inside the environment (see
	// journal.go): each call names the workspace in Path and carries its
	// arguments, and gets its answer, as JSON in Data.
	opJournalBegin op = "journal.begin" // checkpoint before a command; Data: journalArgs, answer: journalCmd
	opJournalEnd   op = "journal.end"   // checkpoint after it; Data: journalCmd, answer: undo.Record
	opJournalSteps op = "journal.steps" // Data: journalArgs, answer: []undo.Step
	opJournalUndo  op = "journal.undo"  // Data: journalArgs, answer: undo.Undone
)

// call is a request. Channel-scoped calls name their channel in the frame id.
type call struct {
	Seq uint64       `json:"seq"`
	Op  op           `json:"op"`
	Cmd *wireCommand `json:"cmd,omitempty"`
	// Stdin says stream 0 carries the command's standard input.
	Stdin  bool             `json:"stdin,omitempty"`
	Signal int              `json:"signal,omitempty"`
	Size   *envs.WindowSize `json:"size,omitempty"`
	Path   string           `json:"path,omitempty"`
	Perm   uint32           `json:"perm,omitempty"`
	Data   json.RawMessage  `json:"data,omitempty"`
}

type reply struct {
	Seq    uint64          `json:"seq"`
	Err    *wireError      `json:"err,omitempty"`
	PID    int             `json:"pid,omitempty"`
	Result *wireResult     `json:"result,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// JSON strings must be valid UTF-8 (encoding/json replaces anything else),
// but commands and their output are bytes. Every byte-string field goes
// over the wire as []byte (base64), the rest as the envs types' own JSON.

type wireCommand struct {
	envs.Command
	Shell []byte            `json:"shell_b,omitempty"`
	Args  [][]byte          `json:"args_b,omitempty"`
	Dir   []byte            `json:"dir_b,omitempty"`
	Env   map[string][]byte `json:"env_b,omitempty"`
}

func commandToWire(c envs.Command) *wireCommand {
	w := &wireCommand{Command: c, Shell: []byte(c.Shell), Dir: []byte(c.Dir)}
	for _, a := range c.Args {
		w.Args = append(w.Args, []byte(a))
	}
	if c.Env != nil {
		w.Env = make(map[string][]byte, len(c.Env))
		for k, v := range c.Env {
			w.Env[k] = []byte(v)
		}
	}
	w.Command.Shell, w.Command.Args, w.Command.Dir, w.Command.Env, w.Command.Stdin = "", nil, "", nil, nil
	return w
}

func (w *wireCommand) command() envs.Command {
	c := w.Command
	c.Shell, c.Dir = string(w.Shell), string(w.Dir)
	for _, a := range w.Args {
		c.Args = append(c.Args, string(a))
	}
	if w.Env != nil {
		c.Env = make(map[string]string, len(w.Env))
		for k, v := range w.Env {
			c.Env[k] = string(v)
		}
	}
	return c
}

type wireResult struct {
	envs.Result
	Output []byte `json:"output_b"`
	Stderr []byte `json:"stderr_b,omitempty"`
}

func resultToWire(r *envs.Result) *wireResult {
	if r == nil {
		return nil
	}
	w := &wireResult{Result: *r, Output: []byte(r.Output), Stderr: []byte(r.Stderr)}
	w.Result.Output, w.Result.Stderr = "", ""
	return w
}

func (w *wireResult) result() *envs.Result {
	r := w.Result
	r.Output, r.Stderr = string(w.Output), string(w.Stderr)
	return &r
}

// exitMsg ends a streaming process.
type exitMsg struct {
	Status envs.ExitStatus `json:"status"`
	Err    *wireError      `json:"err,omitempty"`
}
