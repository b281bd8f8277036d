package gated

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
)

// Options configure an [Env].
type Options struct {
	// Gate judges every command. Required: there is no permissive default.
	Gate *approval.Gate
	// Asker answers commands that need approval. Nil means nobody is
	// present: such commands are denied with a hint on how to allow them.
	Asker approval.Asker
	// Backend names the wrapped backend in prompts ("local", "docker").
	Backend string
	// SessionKey scopes "session" approvals. Empty is one session like any other.
	SessionKey string
}

// Env is an environment whose commands pass the gate first.
type Env struct {
	envs.Environment
	opts Options
}

// New wraps env. It fails without a Gate.
func New(env envs.Environment, opts Options) (*Env, error) {
	if env == nil || opts.Gate == nil {
		return nil, errors.New("gated: an environment and a gate are required")
	}
	return &Env{Environment: env, opts: opts}, nil
}

// Run judges cmd, then runs it on the wrapped environment.
func (e *Env) Run(ctx context.Context, cmd envs.Command) (*envs.Result, error) {
	if err := e.decide(ctx, cmd); err != nil {
		return nil, err
	}
	return e.Environment.Run(ctx, cmd)
}

// Start judges cmd, then starts it on the wrapped environment.
func (e *Env) Start(ctx context.Context, cmd envs.Command) (envs.Process, error) {
	if err := e.decide(ctx, cmd); err != nil {
		return nil, err
	}
	return e.Environment.Start(ctx, cmd)
}

func (e *Env) decide(ctx context.Context, cmd envs.Command) error {
	if err := cmd.Validate(); err != nil {
		return fmt.Errorf("gated: %w", err)
	}
	hostAccess := e.Capabilities().State(envs.CapHostAccess) != envs.Unsupported
	req := approval.Request{
		Command:    Line(cmd),
		Backend:    e.opts.Backend,
		SessionKey: e.opts.SessionKey,
		Sandboxed:  !hostAccess,
		Unattended: e.opts.Asker == nil,
	}
	if hostAccess {
		req.Dir = e.dir(cmd)
	}
	err := e.opts.Gate.Decide(ctx, req, e.opts.Asker)
	if err == nil {
		return nil
	}
	var de *approval.DeniedError
	if !errors.As(err, &de) {
		return fmt.Errorf("gated: %w", err)
	}
	reasons := append([]string(nil), de.Reasons...)
	if de.Hint != "" {
		reasons = append(reasons, de.Hint)
	}
	return fmt.Errorf("gated: %w", &envs.DeniedError{Decision: envs.Decision(de.Decision.String()), Hardline: de.Hardline, Reasons: reasons})
}

// Line is the shell line a command is judged as: the shell string itself,
// or the argv with every word quoted.
func Line(cmd envs.Command) string {
	if cmd.Shell != "" {
		return cmd.Shell
	}
	q := make([]string, len(cmd.Args))
	for i, s := range cmd.Args {
		q[i] = Quote(s)
	}
	return strings.Join(q, " ")
}

// Quote quotes s as one word for a POSIX shell (syntax.Quote), leaving
// plain words as they are. A word with characters POSIX has no escape for
// (a newline, a control character) is single-quoted, which every POSIX
// shell reads back byte for byte: the line may be run by sh, not only by
// bash, so bash's $'…' is not used. NUL, which no argv holds, is dropped.
func Quote(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if q, err := syntax.Quote(s, syntax.LangPOSIX); err == nil {
		return q
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dir is the absolute directory cmd starts in, when the environment can
// tell: cmd.Dir if absolute, else (for a relative or empty one) joined to
// the session's working directory. "" when unknown.
func (e *Env) dir(cmd envs.Command) string {
	if filepath.IsAbs(cmd.Dir) {
		return cmd.Dir
	}
	c, ok := e.Environment.(interface{ Cwd() string })
	if !ok || c.Cwd() == "" {
		return ""
	}
	return filepath.Join(c.Cwd(), cmd.Dir)
}
