package service

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/procregistry"
)

// SandboxPolicy is the confinement of local commands opened with spec: the
// profile asked for (spec.Sandbox, else sandbox.profile), filled with the
// documented defaults, the configuration's additions and runbox's own files.
// An empty profile means workspace. Confinement fails closed: a profile
// this runbox or this kernel cannot give, named or by default, is an error
// saying what is missing and how to choose off; only off, chosen, runs
// commands unconfined.
func (s *Service) SandboxPolicy(spec envs.Spec) (confine.Policy, error) {
	sc := s.opts.Config.Sandbox
	profile, chosen := spec.Sandbox, spec.Sandbox != ""
	if !chosen {
		profile, chosen = sc.Profile, sc.Profile != ""
	}
	if profile == "" {
		profile = confine.ProfileWorkspace
	}
	if profile == confine.ProfileOff {
		return *confine.Off(), nil
	}
	if len(s.opts.Confiner) == 0 {
		return confine.Policy{}, fmt.Errorf("sandbox %s: this runbox cannot start its confinement helper (install %s beside runbox, or choose sandbox: off to run unconfined): %w", profile, confine.Trampoline, envs.ErrUnsupported)
	}
	dir := spec.Dir
	if dir == "" {
		dir = s.workingDir()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	home := s.opts.Getenv("HOME")
	p := confine.DefaultPolicy(profile, dir, home)
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
	p.UnixSockets = append(p.UnixSockets, absAll(sc.UnixSockets)...)
	if sc.Caches == config.CachesShared {
		p.ShareCaches(home)
	}
	if filepath.IsAbs(home) {
		// Best effort: a cache that cannot be made stays unwritable,
		// as it was.
		made, err := confine.MakeCaches(p, home, exec.LookPath)
		if len(made) > 0 || err != nil {
			s.log.Debug("sandbox caches", "made", made, "err", err)
		}
	}
	if err := s.probe().Check(p); err != nil {
		return confine.Policy{}, fmt.Errorf("sandbox %s (choose sandbox: off to run unconfined): %w", profile, err)
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

// workingDir is the directory commands start in when the spec names none:
// PWD when it is this process's working directory (it keeps the name the
// user gave it, links included), else the working directory itself. An
// MCP client that starts runbox serve in a project directory passes on
// its own PWD, which names another directory: the workspace must be
// where serve runs, not where its client was started.
func (s *Service) workingDir() string {
	wd, err := os.Getwd()
	pwd := s.opts.Getenv("PWD")
	if err != nil {
		return pwd
	}
	if pwd != "" && sameFile(pwd, wd) {
		return pwd
	}
	return wd
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
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
		Network:    p.Network,
	}
}

// policyOf is the policy env's commands run under (nil: unconfined).
func policyOf(env envs.Environment) *confine.Policy {
	e, ok := asSandboxed(env)
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
	if !s.onThisMachine(backend) {
		return approval.Sandbox{}
	}
	p, err := s.SandboxPolicy(spec)
	if err != nil {
		return approval.Sandbox{}
	}
	return gateSandbox(&p)
}

// jobSandbox is what the gate is told of the sandbox a job will run in,
// found without opening anything: the gate judges the job before any
// environment (and its shell) is started for it.
func (s *Service) jobSandbox(t JobTarget, req procregistry.StartRequest) approval.Sandbox {
	switch {
	case req.Confine != nil:
		return gateSandbox(req.Confine)
	case t.session != nil:
		return t.session.sandbox()
	}
	return s.GateSandbox(t.Backend, envs.Spec{Dir: cmp.Or(req.Dir, t.Dir)})
}

// confineJob puts a job of this machine in the sandbox its session's commands run
// in (the session's TMPDIR and proxy included), or, for a job started
// outside a session, in the sandbox a local environment in its directory
// would get — with no proxy: under allowlist such a job reaches only the
// ports of sandbox.network.ports. Jobs of other backends are left as they
// are: their sandbox is the container or the remote host.
func (s *Service) confineJob(ctx context.Context, t JobTarget, req *procregistry.StartRequest) error {
	if !s.onThisMachine(t.Backend) || req.Confine != nil {
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
