package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

// ExecuteCodeArgs are the execute_code tool's arguments.
type ExecuteCodeArgs struct {
	Code    string  `json:"code" jsonschema:"Python code to run as one cell in this session's kernel; variables, functions and imports persist across calls. import runbox gives runbox.terminal(command, ...) and runbox.process(action, ...), which run like the terminal and process tools (each command passes the command gate) and return their results as dicts"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"seconds after which the cell is interrupted (KeyboardInterrupt; the namespace survives; a cell that does not stop has its kernel killed); absent or 0: the configured default"`
	Reset   bool    `json:"reset,omitempty" jsonschema:"start a fresh kernel with an empty namespace before running code (code may then be empty)"`
}

// executeCode runs one cell in the session's kernel.
func (s *Server) executeCode(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeArgs) (*mcp.CallToolResult, any, error) {
	sess, err := s.session(req)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	if strings.TrimSpace(in.Code) == "" && !in.Reset {
		return badArgs("code is empty"), nil, nil
	}
	k, lost, err := sess.kernel(ctx)
	if err != nil {
		return s.failure(ctx, sess, "", err), nil, nil
	}
	if strings.TrimSpace(in.Code) != "" {
		ss, err := sess.service()
		if err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		if err := ss.AuthorizeCode(ctx, in.Code); err != nil {
			return s.failure(ctx, sess, service.CodeLine(in.Code), err), nil, nil
		}
	}
	if in.Reset {
		if err := k.Restart(ctx); err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		if strings.TrimSpace(in.Code) == "" {
			return result("[kernel reset: the namespace is empty]", map[string]any{"reset": true}), nil, nil
		}
	}
	timeout := seconds(in.Timeout)
	if timeout == 0 {
		timeout = s.svc.Timeout()
	}
	r, err := k.Execute(ctx, in.Code, kernel.ExecOptions{Timeout: timeout})
	if err != nil {
		return s.failure(ctx, sess, "", err), nil, nil
	}
	if lost && !in.Reset {
		r.Restarted = true
		r.Notice = "this session's kernel had been closed (idle, or evicted to make room for another session's): variables from earlier calls are gone"
	}
	return result(replyText(r), r), nil, nil
}

// replyText is the readable form of a cell's reply.
func replyText(r *kernel.Reply) string {
	var b strings.Builder
	line := func(s string) {
		if s == "" {
			return
		}
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Restarted {
		line("[" + r.Notice + "]")
	}
	line(r.Stdout)
	if r.Stderr != "" {
		line("[stderr]\n" + r.Stderr)
	}
	if r.Result != nil {
		line(*r.Result)
	}
	line(r.Traceback)
	switch {
	case r.StateLost:
		fmt.Fprintf(&b, "[%s]", r.Notice)
	case r.TimedOut:
		b.WriteString("[timed out: interrupted; the namespace is kept]")
	case r.Interrupted:
		b.WriteString("[interrupted; the namespace is kept]")
	case r.Status == kernel.StatusExit && r.ExitCode != nil:
		fmt.Fprintf(&b, "[sys.exit(%d)]", *r.ExitCode)
	default:
		fmt.Fprintf(&b, "[%s, cell %d]", r.Status, r.ExecutionCount)
	}
	if r.Truncated {
		for _, p := range []string{r.StdoutSpillPath, r.StderrSpillPath} {
			if p != "" {
				fmt.Fprintf(&b, "\n[output truncated; the whole stream is in %s]", p)
			}
		}
	}
	return b.String()
}

// kernelTools are the tools code in the session's kernel can call: the
// session's own terminal and process tools, with the same gate.
func (s *Server) kernelTools(sess *session) kernel.Tools {
	return kernel.Tools{
		"terminal": func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in TerminalArgs
			if err := decodeStrict(raw, &in); err != nil {
				return nil, &kernel.ToolError{Kind: service.KindUsage, Message: "runbox.terminal: bad arguments: " + err.Error()}
			}
			return toolValue(s.runTerminal(ctx, sess, in))
		},
		"process": func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in ProcessArgs
			if err := decodeStrict(raw, &in); err != nil {
				return nil, &kernel.ToolError{Kind: service.KindUsage, Message: "runbox.process: bad arguments: " + err.Error()}
			}
			return toolValue(s.runProcess(ctx, sess, in))
		},
	}
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// toolValue turns a tool result into what the code receives: its
// structured content, or a ToolError carrying the structured error.
func toolValue(res *mcp.CallToolResult) (any, error) {
	if !res.IsError {
		return res.StructuredContent, nil
	}
	te, _ := res.StructuredContent.(ToolError)
	msg := te.Error
	if msg == "" {
		msg = resultText(res)
	}
	return nil, &kernel.ToolError{Kind: te.Kind, Message: msg, Data: te}
}

// resultText is the text content of a result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
