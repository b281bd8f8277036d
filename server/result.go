package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// Exit codes carried by tool errors, as `runbox run` would exit.
const (
	exitUsage  = 2   // bad arguments
	exitRunbox = 125 // runbox failed, or the gate refused
)

// result is a successful tool result: a readable text block and the same
// facts as structured content.
func result(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}

// ToolError is the structured content of a tool error: the stable
// encoding of the error ([service.ErrorJSON]) and, for a command refused
// because nobody approved it, the rule ids and how to allow it.
type ToolError struct {
	service.ErrorJSON
	Rules []string `json:"rules,omitempty"`
	Hint  string   `json:"hint,omitempty"`
}

// badArgs is a tool error for arguments the schema could not refuse.
func badArgs(format string, args ...any) *mcp.CallToolResult {
	err := fmt.Errorf("runbox: bad arguments: "+format, args...)
	return errorResult(ToolError{ErrorJSON: service.ErrorJSON{Error: err.Error(), ExitCode: exitUsage, Kind: service.KindBadCommand}})
}

// errorResult is the result of a tool error. The handlers return their
// errors this way, not as a Go error: the SDK's toolForErr (server.go)
// turns a handler's error into a result whose only content is the error's
// text (CallToolResult.SetError, protocol.go), without the structured
// ToolError (exit code, kind, rules and hint) clients rely on.
func errorResult(te ToolError) *mcp.CallToolResult {
	text := te.Error
	if te.Hint != "" && !strings.Contains(text, te.Hint) {
		text += "\n" + te.Hint
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: te}
}

// failure turns err into a tool error. For a command the gate refused
// because it needed an approval it did not get (nobody could be asked,
// the human declined or cancelled, no answer in time), the gate is asked
// again as if unattended, to name the rules and how to allow them.
func (s *Server) failure(ctx context.Context, sess *session, command string, err error) *mcp.CallToolResult {
	te := ToolError{ErrorJSON: service.EncodeError(err, exitRunbox)}
	if !strings.HasPrefix(te.Error, "runbox") {
		te.Error = "runbox: " + te.Error
	}
	var de *envs.DeniedError
	if errors.As(err, &de) && command != "" {
		v := s.svc.Gate().Check(ctx, approval.Request{
			Command: command, Backend: s.opts.Backend, SessionKey: sess.id, Unattended: true,
			Sandboxed: !s.svc.HostAccess(ctx, s.opts.Backend, s.opts.Spec),
		})
		te.Rules = v.Rules
		if !de.Hardline {
			te.Hint = v.Hint
		}
	}
	return errorResult(te)
}
