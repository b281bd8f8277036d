package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/confine/egress"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// RuleEgress is the rule id of a question about a host a confined command
// wants to reach that is not on sandbox.network.allow.
const RuleEgress = "sandbox.egress"

// SandboxPolicy is the confinement of local commands opened with spec: the
// profile asked for (spec.Sandbox, else sandbox.profile), filled with the
// documented defaults, the configuration's additions and runbox's own files.
// An empty profile becomes workspace when the kernel can give it and off
// when it cannot; a profile named by the user that the kernel cannot give
// is an error saying what is missing (never a silently unconfined command).
func (s *Service) SandboxPolicy(spec envs.Spec) (confine.Policy, error) {
	sc := s.opts.Config.Sandbox
	profile, chosen := spec.Sandbox, spec.Sandbox != ""
	if !chosen {
		profile, chosen = sc.Profile, sc.Profile != ""
	}
	if profile == "" {
		profile = confine.ProfileWorkspace
	}
	if profile == confine.ProfileOff || len(s.opts.Confiner) == 0 {
		if profile != confine.ProfileOff && chosen {
			return confine.Policy{}, fmt.Errorf("sandbox %s: this runbox cannot start its confinement helper (choose sandbox: off to run unconfined): %w", profile, envs.ErrUnsupported)
		}
		return confine.Policy{Profile: confine.ProfileOff, Network: confine.NetworkOpen}, nil
	}
	dir := spec.Dir
	if dir == "" {
		dir = s.opts.Getenv("PWD")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := confine.DefaultPolicy(profile, dir, s.opts.Getenv("HOME"))
	if !chosen && profile == confine.ProfileWorkspace && p.Workspace == "/" {
		// Started at the root, there is no workspace to write: a
		// command may still write its TMPDIR. Named by the user, the
		// workspace profile at / is refused instead.
		p = confine.DefaultPolicy(confine.ProfileReadOnly, dir, s.opts.Getenv("HOME"))
	}
	if mode := sc.Network.Mode; mode != "" {
		p.Network = mode
	}
	if spec.Network == "none" {
		p.Network = confine.NetworkOff
	}
	p.Writable = append(p.Writable, absAll(sc.Writable)...)
	p.DenyRead = append(p.DenyRead, absAll(sc.DenyRead)...)
	p.DenyRead = append(p.DenyRead, s.ownFiles()...)
	p.ProtectGit = p.ProtectGit && !sc.GitWritable
	p.AllowPorts = append(p.AllowPorts, sc.Network.Ports...)
	if err := confine.Probe().Check(p); err != nil {
		if chosen {
			return confine.Policy{}, err
		}
		s.log.Warn("runbox: sandbox unavailable, commands run unconfined", "err", err)
		return confine.Policy{Profile: confine.ProfileOff, Network: confine.NetworkOpen}, nil
	}
	return p, nil
}

// ownFiles are runbox's own files no confined command may read or write:
// its configuration and approvals, its state (jobs, the daemon's socket)
// and its spill directory.
func (s *Service) ownFiles() []string {
	var out []string
	for _, pp := range approval.DefaultProtection(s.opts.Getenv).Paths {
		if filepath.IsAbs(pp.Path) {
			out = append(out, pp.Path)
		}
	}
	if f := s.ApprovalFile(); filepath.IsAbs(f) {
		out = append(out, f)
	}
	if d, err := envs.DefaultSpillDir(); err == nil {
		out = append(out, d)
	}
	return out
}

func absAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// egressFor starts the session's proxy when p lets commands out only
// through it, and points p and the children's environment at it. The
// proxy asks through whatever asker the sandbox is given later.
func (s *Service) egressFor(ctx context.Context, p *confine.Policy, sb *sandbox) error {
	if p.Profile == confine.ProfileOff || p.Network != confine.NetworkAllowlist {
		return nil
	}
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
	proxy, err := egress.Start(ctx, egress.Options{Allow: allow, Deny: deny, Ask: sb.askEgress, Logger: log})
	if err != nil {
		return fmt.Errorf("sandbox: start the egress proxy: %w", err)
	}
	sb.proxy = proxy
	p.ProxyPorts = []int{proxy.Port()}
	return nil
}

// sandbox is what a confined local environment owns beside its commands:
// the egress proxy, and who answers its questions.
type sandbox struct {
	policy confine.Policy
	proxy  *egress.Proxy // nil unless the network is allowlist

	mu      sync.Mutex
	asker   approval.Asker
	session string
	backend string
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
	ans, err := a.Ask(ctx, approval.Prompt{
		Command:    "connect to " + target,
		SessionKey: session,
		Backend:    "local",
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

// sandboxedEnv is a local environment whose commands run confined: it
// adds to each result the hosts the proxy refused while the command ran,
// and closes the proxy after the environment.
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
		out = append(out, envs.Violation{Op: "connect", Target: net.JoinHostPort(v.Host, strconv.Itoa(v.Port)), Rule: v.Reason})
	}
	return out
}

// Close closes the environment, then the proxy its commands used.
func (e *sandboxedEnv) Close(ctx context.Context) error {
	err := e.Environment.Close(ctx)
	if e.sb.proxy != nil {
		err = errors.Join(err, e.sb.proxy.Close())
	}
	return err
}

// sandboxOf returns the sandbox of env when it is a confined local
// environment.
func sandboxOf(env envs.Environment) *sandbox {
	if e, ok := env.(*sandboxedEnv); ok {
		return e.sb
	}
	return nil
}

// SandboxProfile is the profile in force for env's commands ("" when env
// does not run them on this machine).
func SandboxProfile(env envs.Environment) string {
	if sb := sandboxOf(env); sb != nil {
		return sb.policy.Profile
	}
	return ""
}

// DescribePolicy is the one line `runbox doctor` prints for p.
func DescribePolicy(p confine.Policy) string {
	if p.Profile == confine.ProfileOff {
		return "off"
	}
	parts := []string{p.Profile, "network " + p.Network}
	if p.Workspace != "" {
		parts = append(parts, "workspace "+p.Workspace)
	}
	return strings.Join(parts, ", ")
}

// WatchViolations starts watching what env's sandbox denies a command
// started now. The function it returns, given the end of the command's
// output once it ended, lists the denials: the kernel's, as the output
// shows them, then the hosts the proxy refused meanwhile. It returns nil
// for an environment that runs nothing confined.
func WatchViolations(env envs.Environment) func(output string) []envs.Violation {
	e, ok := env.(*sandboxedEnv)
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

// gateSandbox is what the gate is told of the confinement a command will
// run under: the lists the kernel applies, so that the gate relaxes only
// what the kernel holds and refuses what it would stop anyway.
func gateSandbox(p *confine.Policy) approval.Sandbox {
	if p == nil || p.Profile == confine.ProfileOff {
		return approval.Sandbox{}
	}
	var writable []string
	if p.Profile == confine.ProfileWorkspace && p.Workspace != "" {
		writable = append(writable, p.Workspace)
	}
	return approval.Sandbox{
		Profile:    approval.SandboxProfile(p.Profile),
		Writable:   append(writable, p.Writable...),
		Unreadable: slices.Clone(p.DenyRead),
	}
}

// policyOf is the policy env's commands run under (nil: unconfined).
func policyOf(env envs.Environment) *confine.Policy {
	e, ok := env.(*sandboxedEnv)
	if !ok {
		return nil
	}
	if x, ok := e.Environment.(interface{ SandboxPolicy() *confine.Policy }); ok {
		return x.SandboxPolicy()
	}
	return &e.sb.policy
}

// GateSandbox is what the gate is told of the sandbox a command run by
// backend in an environment opened with spec would get (the zero value
// for backends whose commands do not run on this machine).
func (s *Service) GateSandbox(backend string, spec envs.Spec) approval.Sandbox {
	if backend != "local" {
		return approval.Sandbox{}
	}
	p, err := s.SandboxPolicy(spec)
	if err != nil {
		return approval.Sandbox{}
	}
	return gateSandbox(&p)
}

// confineJob puts a local job in the sandbox its session's commands run
// in (the session's TMPDIR and proxy included), or, for a job started
// outside a session, in the sandbox a local environment in its directory
// would get — with no proxy: under allowlist such a job reaches only the
// ports of sandbox.network.ports. Jobs of other backends are left as they
// are: their sandbox is the container or the remote host.
func (s *Service) confineJob(ctx context.Context, t JobTarget, req *procregistry.StartRequest) error {
	if t.Backend != "local" || req.Confine != nil {
		return nil
	}
	var p *confine.Policy
	var env map[string]string
	if t.session != nil {
		e, err := t.session.Env(ctx)
		if err != nil {
			return err
		}
		p = policyOf(e)
		if sb := sandboxOf(e); sb != nil && sb.proxy != nil {
			env = sb.proxy.Env()
		}
	} else {
		pol, err := s.SandboxPolicy(envs.Spec{Dir: cmp.Or(req.Dir, t.Dir)})
		if err != nil {
			return err
		}
		p = &pol
	}
	if p == nil || p.Profile == confine.ProfileOff {
		return nil
	}
	req.Confine, req.Confiner = p, s.opts.Confiner
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	for k, v := range env {
		if _, set := req.Env[k]; !set {
			req.Env[k] = v
		}
	}
	return nil
}
