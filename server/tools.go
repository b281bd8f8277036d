package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' arguments. Names are the contract; every call is checked
// against the schemas derived from these types before a handler runs
// (unknown properties, missing ones, wrong types and bounds are refused
// with a message naming the field, see checkArgs; the SDK's own
// validation then runs too), and the handlers check what a schema cannot
// say.

// TerminalArgs are the terminal tool's arguments.
type TerminalArgs struct {
	Command          string   `json:"command" jsonschema:"the shell command line to run, in the session's shell (cd and export carry over to later foreground commands)"`
	Timeout          float64  `json:"timeout,omitempty" jsonschema:"seconds after which the command's whole process tree is killed (exit code 124); absent or 0: the configured default. Foreground only"`
	Workdir          string   `json:"workdir,omitempty" jsonschema:"directory to run this command in (default: the session's current directory)"`
	Background       bool     `json:"background,omitempty" jsonschema:"start the command as a background job and return its session_id and pid at once; manage it with the process tool"`
	PTY              bool     `json:"pty,omitempty" jsonschema:"run the command on a pseudo-terminal (one output stream)"`
	NotifyOnComplete bool     `json:"notify_on_complete,omitempty" jsonschema:"background only: send a notification when the job completes"`
	WatchPatterns    []string `json:"watch_patterns,omitempty" jsonschema:"background only: Go regular expressions; an output line matching one sends a notification"`
	Heartbeat        float64  `json:"heartbeat,omitempty" jsonschema:"background only: send a progress notification this often (seconds, at least 5) while there is new output"`
	Detach           bool     `json:"detach,omitempty" jsonschema:"background only: keep the job running after this session ends (by default the session's jobs are killed with it); the same as lifetime detached"`
	Lifetime         string   `json:"lifetime,omitempty" jsonschema:"background or yield only: the job's class. session (the default): killed when this session ends; detached: outlives this session until it ends or is killed; keep-awake: detached, and while it runs this session and its sandbox are not closed or reaped for being idle. (command is a foreground command's class.) Change it later with the process tool's lifetime action"`
	QuietAfter       float64  `json:"quiet_after,omitempty" jsonschema:"background or yield only: send one notification (with the output tail) when the job has written nothing for this many seconds; again after its output resumes. Absent or 0: none"`
	NoOutputTimeout  float64  `json:"no_output_timeout,omitempty" jsonschema:"background or yield only: end the job (its whole process tree) once it has written nothing for this many seconds; its completion notice gives the reason no_output_timeout. Absent or 0: none"`
	InputWait        float64  `json:"input_wait,omitempty" jsonschema:"background or yield only: send one notification (with the output tail) when the job has been blocked reading its stdin, with no output, for this many seconds; answer it with the process tool's submit or write. Absent or 0: 2; negative: never"`
	Yield            float64  `json:"yield,omitempty" jsonschema:"seconds to wait for the command: one that ends by then returns its result; one still running returns its output so far and a session_id, carries on as a background job and sends one notification when it completes. It runs as a job: cd and export in it do not carry over"`
}

// ProcessArgs are the process tool's arguments.
type ProcessArgs struct {
	Action    string  `json:"action" jsonschema:"what to do: list, poll, log, wait, kill, write, submit, close, handoff or lifetime"`
	SessionID string  `json:"session_id,omitempty" jsonschema:"the background job's id (its session_id from terminal); a unique prefix will do. Required except for list"`
	Offset    int64   `json:"offset,omitempty" jsonschema:"log: byte offset to read from (the next offset is returned)"`
	Limit     int     `json:"limit,omitempty" jsonschema:"log: at most this many bytes (default and maximum: the output limit)"`
	Tail      int     `json:"tail,omitempty" jsonschema:"log: only the last N lines"`
	Timeout   float64 `json:"timeout,omitempty" jsonschema:"wait: seconds to wait for the job to finish (default 60); a job still running then is not an error"`
	Data      string  `json:"data,omitempty" jsonschema:"write / submit: text for the job's stdin (submit adds the line end); each line passes the command gate"`
	Owner     string  `json:"owner,omitempty" jsonschema:"handoff: the owner who takes the job (default: the runbox CLI's owner); the job then outlives this session"`
	Note      string  `json:"note,omitempty" jsonschema:"handoff: a note for the new owner"`
	Yield     float64 `json:"yield,omitempty" jsonschema:"write / submit / poll: seconds to wait (after writing) for the job's new output or its end; the result then holds the output since the call began"`
	Lifetime  string  `json:"lifetime,omitempty" jsonschema:"lifetime: the job's new class while it runs: session (killed when this session ends), detached (outlives it) or keep-awake (outlives it and keeps this session and its sandbox from idle timeouts)"`
}

// CheckArgs are the check_command tool's arguments.
type CheckArgs struct {
	Command string `json:"command" jsonschema:"the shell command line to judge; nothing is run"`
}

// processActionNames are the process tool's actions, in the order the
// schema lists them.
var processActionNames = []string{"list", "poll", "log", "wait", "kill", "write", "submit", "close", "handoff", "lifetime"}

// addTools registers the tools with their schemas.
func (s *Server) addTools() error {
	term, err := schemaFor[TerminalArgs](func(p map[string]*jsonschema.Schema) {
		p["command"].MinLength = ptr(1)
		p["timeout"].Minimum = ptr(0.0)
		p["heartbeat"].Minimum = ptr(0.0)
		p["yield"].Minimum = ptr(0.0)
		p["quiet_after"].Minimum = ptr(0.0)
		p["no_output_timeout"].Minimum = ptr(0.0)
	})
	if err != nil {
		return err
	}
	proc, err := schemaFor[ProcessArgs](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = anySlice(processActionNames)
		p["offset"].Minimum = ptr(0.0)
		p["limit"].Minimum = ptr(0.0)
		p["tail"].Minimum = ptr(0.0)
		p["timeout"].Minimum = ptr(0.0)
		p["yield"].Minimum = ptr(0.0)
	})
	if err != nil {
		return err
	}
	code, err := schemaFor[ExecuteCodeArgs](func(p map[string]*jsonschema.Schema) {
		p["timeout"].Minimum = ptr(0.0)
	})
	if err != nil {
		return err
	}
	check, err := schemaFor[CheckArgs](func(p map[string]*jsonschema.Schema) {
		p["command"].MinLength = ptr(1)
	})
	if err != nil {
		return err
	}
	s.schemas = map[string]*jsonschema.Schema{"terminal": term, "process": proc, "execute_code": code, "check_command": check}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "terminal",
		Title: "Run a shell command",
		Description: "Run a shell command in this session's sandboxed environment and return its output (bounded: the head and tail are kept), " +
			"exit_code, timed_out and cwd. With background, start it as a job and return its session_id and pid at once. " +
			"Every command passes runbox's command gate first: dangerous ones may need a human's approval, hardline ones are refused.",
		InputSchema: term,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, sessionTool(s, (*Server).runTerminal))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "process",
		Title: "Manage background jobs",
		Description: "Manage this session's background jobs: list; poll (status and output tail); log (offset/limit, or tail N lines); " +
			"wait (up to timeout seconds); kill (the whole tree); write / submit (text to its stdin, gated like a command); close (end of input); " +
			"handoff (give it to another owner so it outlives this session).",
		InputSchema: proc,
	}, sessionTool(s, (*Server).runProcess))
	if s.opts.Sync != nil {
		sync, err := schemaFor[SyncArgs](func(p map[string]*jsonschema.Schema) {
			p["action"].Enum = []any{"push", "diff"}
		})
		if err != nil {
			return err
		}
		s.schemas["sync"] = sync
		mcp.AddTool(s.mcp, &mcp.Tool{
			Name:  "sync",
			Title: "Push the workspace or see what changed in it",
			Description: "The local project is copied to the workspace before every foreground command. push: copy what changed now. " +
				"diff: what the commands changed in the workspace since the last push, as unified diffs (path, kind added/modified/deleted/conflict). " +
				"Changes reach the user's files only when the user applies them (runbox sync apply).",
			InputSchema: sync,
		}, s.sync)
	}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "execute_code",
		Title: "Run Python code in a persistent kernel",
		Description: "Run Python code in this session's kernel (one python3 process in the session's environment) and return its stdout and stderr (bounded), " +
			"the repr of its last expression, and the traceback of an exception. Variables persist across calls; reset starts a fresh kernel. " +
			"In the code, import runbox gives runbox.terminal(command, timeout=None, workdir=None, background=False) and runbox.process(action, session_id=None, ...), " +
			"which return the terminal and process tools' results as dicts: a loop of many commands costs one call. Every command passes the command gate; " +
			"a refused one raises runbox.Denied.",
		InputSchema: code,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, s.executeCode)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "check_command",
		Title:       "Check a command against the gate",
		Description: "Say whether the command gate would allow a command, ask a human first, or refuse it (and why), without running anything.",
		InputSchema: check,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.checkCommand)
	if err := s.addUndoTool(); err != nil {
		return err
	}
	return s.addTasksTool()
}

// schemaFor derives T's input schema and lets tweak add what struct tags
// cannot say (enums, bounds).
func schemaFor[T any](tweak func(map[string]*jsonschema.Schema)) (*jsonschema.Schema, error) {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("server: schema: %w", err)
	}
	tweak(sc.Properties)
	return sc, nil
}

func ptr[T any](v T) *T { return &v }

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range slices.Clone(ss) {
		out[i] = s
	}
	return out
}

// sessionTool is the MCP handler of a tool that run serves for one
// session, for the MCP client and for code in the session's kernel alike:
// the call's session, and the call's time bound.
func sessionTool[In any](s *Server, run func(*Server, context.Context, *session, In) *mcp.CallToolResult) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		sess, err := s.session(req)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := s.callContext(ctx)
		defer cancel()
		return run(s, ctx, sess, in), nil, nil
	}
}

// defaultInputWait is how long a job started through the terminal tool
// sits blocked reading its stdin before its waiting-for-input notice,
// when input_wait is absent.
const defaultInputWait = 2 * time.Second

// idleOptions are the terminal tool's quiet_after, no_output_timeout and
// input_wait as a job's start options (see package procregistry's
// StartRequest).
func idleOptions(in TerminalArgs) (quiet, noOutput, inputWait time.Duration) {
	inputWait = seconds(in.InputWait)
	switch {
	case in.InputWait == 0:
		inputWait = defaultInputWait
	case in.InputWait < 0:
		inputWait = 0
	}
	return seconds(in.QuietAfter), seconds(in.NoOutputTimeout), inputWait
}
