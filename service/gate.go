package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"mvdan.cc/sh/v3/syntax"
)

// newGate builds the command gate from the configuration. "Always"
// answers are written to the configuration file in use (or the default
// one), merged with what is on disk; they take effect for the next
// Service, since this one keeps the policy it started with.
func (s *Service) newGate() (*approval.Gate, error) {
	c := s.opts.Config
	mode, err := approval.ParseMode(c.Approval.Mode)
	if err != nil {
		return nil, err
	}
	return approval.New(approval.Options{
		Mode:           mode,
		Yolo:           s.opts.Yolo,
		Allow:          c.Approval.Allow,
		Deny:           c.Approval.Deny,
		ConfigFile:     s.ApprovalFile(),
		RelaxSandboxed: c.Approval.RelaxWithoutHostAccess,
		// runbox's own configuration, approvals and state: no command may
		// rewrite the policy that judges the next one.
		Protect: approval.DefaultProtection(s.opts.Getenv),
	})
}

// ApprovalFile is where "always" answers are saved: the configuration
// file in use, else the default one ("" when there is none: such an
// answer holds for this Service only).
func (s *Service) ApprovalFile() string {
	if p := s.opts.Config.Path; p != "" {
		return p
	}
	return config.DefaultPath(s.opts.Getenv)
}

// Authorization is one question to the gate.
type Authorization struct {
	// Command is the shell line (or the text written to a stdin).
	Command string
	// Backend names where it would run.
	Backend string
	// HostAccess is true when the backend can touch this machine. Unknown
	// counts as true: the safe side.
	HostAccess bool
	// SessionKey scopes "session" answers.
	SessionKey string
	// Dir is the absolute directory the command starts in, so that
	// relative paths to protected files are resolved. Empty means unknown.
	Dir string
	// Asker answers an "ask" verdict. Nil means nobody can: such a
	// command is refused with a hint on how to allow it.
	Asker approval.Asker
	// Sandbox is the confinement the command will run under (the zero
	// value: none), so the gate neither asks about what the kernel holds
	// nor lets through what the kernel would stop.
	Sandbox approval.Sandbox
	// Input, when set, says Command is text piped to the standard input
	// of a program that reads it as Input.Kind says (approval.Request.Input).
	Input approval.Input
}

// Authorize passes a command through the gate. It returns nil when the
// command may run, and otherwise an error matching envs.ErrDenied that
// unwraps to an *envs.DeniedError.
func (s *Service) Authorize(ctx context.Context, a Authorization) error {
	req := a.request()
	if err := s.gate.Decide(ctx, req, a.Asker); err != nil {
		return deniedError(err)
	}
	return nil
}

// Check is the verdict Authorize would act on, for a session where
// someone can answer (a.Asker is not used): what runbox check shows.
func (s *Service) Check(ctx context.Context, a Authorization) approval.Verdict {
	req := a.request()
	req.Unattended = false
	return s.gate.Check(ctx, req)
}

func (a Authorization) request() approval.Request {
	return approval.Request{
		Command: a.Command, Backend: a.Backend, Sandboxed: !a.HostAccess,
		SessionKey: a.SessionKey, Unattended: a.Asker == nil, Dir: a.Dir,
		Sandbox: a.Sandbox, Input: a.Input,
	}
}

// HostAccess reports whether backend's commands opened with spec can
// touch this machine. Unknown backends and capabilities count as host
// access.
func (s *Service) HostAccess(ctx context.Context, backend string, spec envs.Spec) bool {
	p, err := s.providers.Lookup(backend)
	if err != nil || p.Capabilities == nil {
		return true
	}
	caps := p.Capabilities(ctx, spec)
	return caps == nil || caps.State(envs.CapHostAccess) != envs.Unsupported
}

// deniedError turns the gate's refusal into the contract's
// *envs.DeniedError, so callers match envs.ErrDenied.
func deniedError(err error) error {
	var de *approval.DeniedError
	if !errors.As(err, &de) {
		return err
	}
	reasons := de.Reasons
	if de.Hint != "" {
		reasons = append(reasons[:len(reasons):len(reasons)], de.Hint)
	}
	return fmt.Errorf("refused by the command gate: %w", &envs.DeniedError{Decision: verdict(de.Decision), Hardline: de.Hardline, Reasons: reasons})
}

// verdict is the contract's name for the gate's refusal d. A refusal is
// Ask or Deny; anything else still refused the command, so it is Deny.
func verdict(d approval.Decision) envs.Decision {
	if d == approval.Ask {
		return envs.DecisionAsk
	}
	return envs.DecisionDeny
}

// lineOf is the shell line that runs argv.
func lineOf(argv []string) string { return CommandLine(envs.Command{Args: argv}) }

// CommandLine is the shell line a command is judged as: the shell string
// itself, or the argv with every word quoted (see quoteWord).
func CommandLine(cmd envs.Command) string {
	if cmd.Shell != "" {
		return cmd.Shell
	}
	q := make([]string, len(cmd.Args))
	for i, s := range cmd.Args {
		q[i] = quoteWord(s)
	}
	return strings.Join(q, " ")
}

// quoteWord quotes s as one word for a POSIX shell (syntax.Quote), leaving
// plain words as they are. A word with characters POSIX has no escape for
// (a newline, a control character) is single-quoted, which every POSIX
// shell reads back byte for byte: the line may be run by sh, not only by
// bash, so bash's $'…' is not used. NUL, which no argv holds, is dropped.
func quoteWord(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if q, err := syntax.Quote(s, syntax.LangPOSIX); err == nil {
		return q
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
