package service

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/modal"
	"github.com/runbox/runbox/ssh"
	"github.com/runbox/runbox/vercel"
)

// newProviders builds the provider table: one registration per backend.
func (s *Service) newProviders() (*envs.Providers, error) {
	t := envs.NewProviders()
	for _, p := range []envs.Provider{
		s.localProvider(),
		s.dockerProvider(),
		s.modalProvider(),
		s.sshProvider(),
		daytona.Provider(s.DaytonaOptions),
		s.kubernetesProvider(),
		s.singularityProvider(),
		vercel.Provider(s.VercelOptions),
	} {
		if err := t.Register(p); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// localBackend is the name of the backend on this machine: the default.
const localBackend = "local"

// localProvider runs commands on this machine, configured by the top
// level of the configuration (shell, contain, grace, limits, spawn).
func (s *Service) localProvider() envs.Provider {
	return envs.Provider{
		Name:          localBackend,
		OnThisMachine: true,
		Tasks:         localTasks{s},
		Description:   "this machine (bash or sh), each command in its own process group and container",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			if err := localHonours(spec); err != nil {
				return nil, err
			}
			return s.openLocal(ctx, spec)
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return local.Capabilities(ctx, s.LocalOptions(spec))
		},
	}
}

// LocalOptions are the local backend's options for spec: the mapping of
// the configuration that the agent inside a sandbox uses too
// (local.AgentOptions), plus the spec and this host's subreaper.
func (s *Service) LocalOptions(spec envs.Spec) local.Options {
	o := local.AgentOptions(s.opts.Config, s.Environ(), s.log)
	o.Dir, o.Env = spec.Dir, spec.Env
	if !spec.Limits.IsZero() {
		o.Limits = spec.Limits
	}
	o.Subreaper = s.opts.Subreaper
	o.KeepLeftovers = false // on this machine a command's leftovers die with it
	o.NoPrestart = o.NoPrestart || s.opts.OneCommand
	return o
}

// openLocal opens a local environment whose commands run under the
// sandbox the configuration and spec ask for, with the session's egress
// proxy when its network is an allow-list.
func (s *Service) openLocal(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
	o := s.LocalOptions(spec)
	pol, err := s.SandboxPolicy(spec)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if spec.Network == "none" && pol.Profile == confine.ProfileOff {
		return nil, fmt.Errorf("local: network policy none needs the sandbox (workspace or read-only profile) on this machine: %w", envs.ErrUnsupported)
	}
	sb := &sandbox{}
	if err := s.egressFor(ctx, &pol, sb); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	sb.policy = pol
	if sb.proxy != nil {
		env := maps.Clone(o.Env)
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, sb.proxy.Env())
		o.Env = env
	}
	o.Confine, o.Confiner = &pol, s.opts.Confiner
	e, err := local.New(o)
	if err != nil {
		if sb.proxy != nil {
			sb.proxy.Close()
		}
		return nil, err
	}
	return &sandboxedEnv{Environment: e, sb: sb}, nil
}

// localHonours refuses what the local backend cannot enforce, rather than
// run the command without it.
func localHonours(spec envs.Spec) error {
	if spec.Network != "" && spec.Network != "none" {
		return fmt.Errorf("local: network policy %q cannot be enforced on this machine (the sandbox gives none, or an allow-list through sandbox.network; use a container backend): %w", spec.Network, envs.ErrUnsupported)
	}
	if spec.Image != "" {
		return fmt.Errorf("local: an image (%s) needs a container backend: %w", spec.Image, envs.ErrUnsupported)
	}
	for k := range spec.Settings {
		return fmt.Errorf("local: setting %q is not one the local backend has (it applies to container backends): %w", k, envs.ErrUnsupported)
	}
	return nil
}

// modalProvider is the modal backend's row, with its snapshots as tasks.
func (s *Service) modalProvider() envs.Provider {
	p := modal.Provider(s.ModalOptions)
	p.Tasks = modalTasks{s}
	return p
}

// sshProvider is the ssh backend's row, which says in the user's terms
// that no host is configured.
func (s *Service) sshProvider() envs.Provider {
	p := ssh.Provider(s.SSHOptions)
	p.Missing = func(spec envs.Spec) error {
		if s.SSHOptions(spec).Host == "" {
			return ErrNoSSHHost
		}
		return nil
	}
	return p
}

// Reap runs backend's reaper ([envs.Provider].Reap): it removes what
// runbox processes that are gone left there. runbox serve runs it once
// at start; it is bounded by a few seconds, and a backend that does not
// answer is only logged.
func (s *Service) Reap(ctx context.Context, backend string) {
	p, err := s.providers.Lookup(backend)
	if err != nil || p.Reap == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reaped, err := p.Reap(ctx)
	for _, r := range reaped {
		s.log.Info("reaped what a gone runbox left", "backend", backend, "object", r)
	}
	if err != nil {
		s.log.Warn("reap", "backend", backend, "err", err)
	}
}

// Warm starts keeping backend's environments for spec ready, where the
// backend keeps a warm pool ([envs.Provider].Warm); elsewhere it does
// nothing.
func (s *Service) Warm(backend string, spec envs.Spec) error {
	p, err := s.providers.Lookup(backend)
	if err != nil || p.Warm == nil {
		return nil
	}
	return p.Warm(spec)
}
