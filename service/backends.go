package service

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/agent/agentd"
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/modal"
	"github.com/runbox/runbox/ssh"
)

// newProviders builds the provider table: one registration per backend.
func (s *Service) newProviders() (*envs.Providers, error) {
	t := envs.NewProviders()
	for _, p := range []envs.Provider{
		s.localProvider(),
		s.dockerProvider(),
		modal.Provider(s.ModalOptions),
		ssh.Provider(s.SSHOptions),
		daytona.Provider(s.DaytonaOptions),
	} {
		if err := t.Register(p); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// localProvider runs commands on this machine, configured by the top
// level of the configuration (shell, contain, grace, limits, spawn).
func (s *Service) localProvider() envs.Provider {
	return envs.Provider{
		Name:        "local",
		Description: "this machine (bash or sh), each command in its own process group and container",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			if err := localHonours(spec); err != nil {
				return nil, err
			}
			return local.New(s.LocalOptions(spec))
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return local.Capabilities(ctx, s.LocalOptions(spec))
		},
	}
}

// LocalOptions are the local backend's options for spec: the mapping of
// the configuration that the agent inside a sandbox uses too
// (agentd.LocalOptions), plus the spec and this host's subreaper.
func (s *Service) LocalOptions(spec envs.Spec) local.Options {
	o := agentd.LocalOptions(s.opts.Config, s.Environ(), s.log)
	o.Dir, o.Env = spec.Dir, spec.Env
	if !spec.Limits.IsZero() {
		o.Limits = spec.Limits
	}
	o.Subreaper = s.opts.Subreaper
	o.KeepLeftovers = false // on this machine a command's leftovers die with it
	o.NoPrestart = o.NoPrestart || s.opts.OneCommand
	return o
}

// localHonours refuses what the local backend cannot enforce, rather than
// run the command without it.
func localHonours(spec envs.Spec) error {
	if spec.Network != "" {
		return fmt.Errorf("local: network policy %q cannot be enforced on this machine (commands use the host's network; use a container backend): %w", spec.Network, envs.ErrUnsupported)
	}
	if spec.Image != "" {
		return fmt.Errorf("local: an image (%s) needs a container backend: %w", spec.Image, envs.ErrUnsupported)
	}
	for k := range spec.Settings {
		return fmt.Errorf("local: setting %q is not one the local backend has (it applies to container backends): %w", k, envs.ErrUnsupported)
	}
	return nil
}
