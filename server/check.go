package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/approval"
)

// CheckResult is check_command's structured result: the fields of
// `runbox check --jsonl`, plus the matched rule ids and, for a command
// that would be refused only because nobody can approve it, how to allow
// it.
type CheckResult struct {
	Command  string            `json:"command"`
	Decision approval.Decision `json:"decision"`
	Hardline bool              `json:"hardline"`
	Reasons  []string          `json:"reasons"`
	Rules    []string          `json:"rules"`
	Hint     string            `json:"hint,omitempty"`
}

// checkCommand judges a command as this session's next command would be
// judged (its backend, its session approvals, whether its client can be
// asked), and runs nothing.
func (s *Server) checkCommand(ctx context.Context, req *mcp.CallToolRequest, in CheckArgs) (*mcp.CallToolResult, any, error) {
	sess, err := s.session(req)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return badArgs("command is empty"), nil, nil
	}
	v := s.svc.Gate().Check(ctx, approval.Request{
		Command: in.Command, Backend: s.opts.Backend, SessionKey: sess.id,
		Sandboxed:  !s.svc.HostAccess(ctx, s.opts.Backend, s.opts.Spec),
		Unattended: !canElicit(sess.mcp),
	})
	out := CheckResult{Command: in.Command, Decision: v.Decision, Hardline: v.Hardline, Reasons: v.Reasons, Rules: v.Rules, Hint: v.Hint}
	if out.Reasons == nil {
		out.Reasons = []string{}
	}
	if out.Rules == nil {
		out.Rules = []string{}
	}
	var b strings.Builder
	switch {
	case v.Hardline:
		b.WriteString("deny (hardline: never run)")
	case v.Decision == approval.Ask:
		b.WriteString("ask (a human is asked to approve it first)")
	default:
		b.WriteString(v.Decision.String())
	}
	for _, r := range v.Reasons {
		fmt.Fprintf(&b, "\n- %s", r)
	}
	if len(v.Rules) > 0 {
		fmt.Fprintf(&b, "\nrules: %s", strings.Join(v.Rules, ", "))
	}
	if v.Hint != "" {
		fmt.Fprintf(&b, "\n%s", v.Hint)
	}
	return result(b.String(), out), nil, nil
}
