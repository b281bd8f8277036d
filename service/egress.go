package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/confine/egress"
	"github.com/runbox/runbox/envs"
)

// This file is the session's egress proxy, shared by every backend whose
// network is an allow-list: local commands (the kernel lets them connect
// only to the proxy) and docker containers (an internal network whose only
// exit is the proxy). Both ask through the session's approver and report
// refusals in each result.

// RuleEgress is the rule id of a question about a host a confined command
// wants to reach that is not on sandbox.network.allow.
const RuleEgress = "sandbox.egress"

// egressFor starts the session's proxy when p lets commands out only
// through it, and points p and the children's environment at it. The
// proxy asks through whatever asker the sandbox is given later.
func (s *Service) egressFor(ctx context.Context, p *confine.Policy, sb *sandbox) error {
	if p.Profile == confine.ProfileOff || p.Network != confine.NetworkAllowlist {
		return nil
	}
	if err := s.startEgress(ctx, sb, ""); err != nil {
		return err
	}
	p.ProxyPorts = []int{sb.proxy.Port()}
	return nil
}

// startEgress starts sb's proxy on listen ("" is a loopback port) with
// the lists of sandbox.network: allowed hosts pass, denied ones are
// refused, and any other is asked about through sb's asker.
func (s *Service) startEgress(ctx context.Context, sb *sandbox, listen string) error {
	sc := s.opts.Config.Sandbox.Network
	allow, err := egress.ParseRules(sc.Allow)
	if err != nil {
		return fmt.Errorf("sandbox.network.allow: %w", err)
	}
	deny, err := egress.ParseRules(sc.Deny)
	if err != nil {
		return fmt.Errorf("sandbox.network.deny: %w", err)
	}
	// Each refusal reaches the user in the command's result; the proxy's
	// own log line is for --verbose.
	log := slog.New(slog.DiscardHandler)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		log = s.log
	}
	proxy, err := egress.Start(ctx, egress.Options{Allow: allow, Deny: deny, Ask: sb.askEgress, Logger: log, Listen: listen})
	if err != nil {
		return fmt.Errorf("sandbox: start the egress proxy: %w", err)
	}
	sb.proxy = proxy
	return nil
}

// sandbox is what a confined environment owns beside its commands: the
// egress proxy, who answers its questions, and what else goes when the
// environment closes.
type sandbox struct {
	policy  confine.Policy
	proxy   *egress.Proxy // nil unless the network is allowlist
	backend string        // the backend named in questions ("" is local)
	// release, when set, frees what the environment's network needed
	// beside the proxy (a docker network), after the environment and
	// the proxy are closed.
	release func(context.Context) error

	mu      sync.Mutex
	asker   approval.Asker
	session string
}

// setAsker makes a answer the proxy's questions for session.
func (sb *sandbox) setAsker(a approval.Asker, session string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.asker, sb.session = a, session
}

// askEgress asks whether a confined command may reach host:port. Nobody
// to ask means no.
func (sb *sandbox) askEgress(ctx context.Context, host string, port int) (bool, string, error) {
	sb.mu.Lock()
	a, session := sb.asker, sb.session
	sb.mu.Unlock()
	if a == nil {
		return false, "", errors.New("no one is present to approve it")
	}
	target := fmt.Sprintf("%s:%d", host, port)
	backend := sb.backend
	if backend == "" {
		backend = localBackend
	}
	ans, err := a.Ask(ctx, approval.Prompt{
		Command:    "connect to " + target,
		SessionKey: session,
		Backend:    backend,
		Reasons:    []string{fmt.Sprintf("sandbox: %s is not on sandbox.network.allow", host)},
		Rules:      []string{RuleEgress},
	})
	if err != nil {
		return false, "", err
	}
	switch ans.Kind {
	case approval.AnswerOnce:
		return true, egress.ScopeOnce, nil
	case approval.AnswerSession, approval.AnswerAlways:
		// "always" holds for the session: the allow list is the
		// configuration's, edited by the user, not by an answer.
		return true, egress.ScopeSession, nil
	}
	return false, "", nil
}

// close closes the proxy, then releases the rest.
func (sb *sandbox) close(ctx context.Context) error {
	var err error
	if sb.proxy != nil {
		err = sb.proxy.Close()
	}
	if sb.release != nil {
		err = errors.Join(err, sb.release(ctx))
	}
	return err
}

// sandboxedEnv is an environment whose commands run confined: it adds to
// each result the hosts the proxy refused while the command ran, and
// closes the proxy (and what else the sandbox holds) after the
// environment.
type sandboxedEnv struct {
	envs.Environment
	sb *sandbox
}

// Run runs c and reports the proxy's refusals during it. With commands
// running side by side, a refusal is reported by every command that was
// running when it happened.
func (e *sandboxedEnv) Run(ctx context.Context, c envs.Command) (*envs.Result, error) {
	from := 0
	if e.sb.proxy != nil {
		_, from = e.sb.proxy.Violations(-1)
	}
	res, err := e.Environment.Run(ctx, c)
	if res != nil {
		res.SandboxViolations = append(res.SandboxViolations, e.proxyDenials(from)...)
	}
	return res, err
}

// proxyDenials are the hosts the proxy refused since cursor from.
func (e *sandboxedEnv) proxyDenials(from int) []envs.Violation {
	if e.sb.proxy == nil {
		return nil
	}
	vs, _ := e.sb.proxy.Violations(from)
	out := make([]envs.Violation, 0, len(vs))
	for _, v := range vs {
		out = append(out, envs.Violation{Op: "connect", Target: net.JoinHostPort(v.Host, strconv.Itoa(v.Port)), Rule: v.Reason, Source: envs.SourceDecided})
	}
	return out
}

// Close closes the environment, then the proxy its commands used and
// what else its sandbox holds.
func (e *sandboxedEnv) Close(ctx context.Context) error {
	return errors.Join(e.Environment.Close(ctx), e.sb.close(ctx))
}

// confined is an environment whose commands run in a sandbox of this
// package: a *sandboxedEnv, or a backend's wrapper around one that keeps
// the backend's optional interfaces.
type confined interface{ sandboxed() *sandboxedEnv }

func (e *sandboxedEnv) sandboxed() *sandboxedEnv { return e }

// asSandboxed returns env's sandboxedEnv when its commands run confined.
func asSandboxed(env envs.Environment) (*sandboxedEnv, bool) {
	if c, ok := env.(confined); ok {
		return c.sandboxed(), true
	}
	return nil, false
}

// sandboxOf returns the sandbox of env when its commands run confined.
func sandboxOf(env envs.Environment) *sandbox {
	if e, ok := asSandboxed(env); ok {
		return e.sb
	}
	return nil
}

// WatchViolations starts watching what env's sandbox denies a command
// started now. The function it returns, given the end of the command's
// output once it ended, lists the denials: the kernel's, as the output
// shows them, then the hosts the proxy refused meanwhile. It returns nil
// for an environment that runs nothing confined.
func WatchViolations(env envs.Environment) func(output string) []envs.Violation {
	e, ok := asSandboxed(env)
	if !ok {
		return func(string) []envs.Violation { return nil }
	}
	from := 0
	if e.sb.proxy != nil {
		_, from = e.sb.proxy.Violations(-1)
	}
	return func(output string) []envs.Violation {
		var out []envs.Violation
		if x, ok := e.Environment.(interface {
			ExplainDenials(string) []envs.Violation
		}); ok {
			out = x.ExplainDenials(output)
		}
		return append(out, e.proxyDenials(from)...)
	}
}
