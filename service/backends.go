package service

import (
	"context"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// newProviders builds the provider table: one registration per backend.
func (s *Service) newProviders() (*envs.Providers, error) {
	t := envs.NewProviders()
	for _, p := range []envs.Provider{
		s.localProvider(),
		s.dockerProvider(),
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
			return local.New(s.LocalOptions(spec))
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return local.Capabilities(ctx, s.LocalOptions(spec))
		},
	}
}

// LocalOptions are the local backend's options for spec, from the
// configuration.
func (s *Service) LocalOptions(spec envs.Spec) local.Options {
	c := s.opts.Config
	pol := s.SpawnPolicy()
	grace := time.Duration(c.Grace)
	if grace == 0 {
		grace = local.NoGrace
	}
	limits := spec.Limits
	if limits.IsZero() {
		limits = s.Limits()
	}
	return local.Options{
		Dir:           spec.Dir,
		Shell:         c.Shell,
		BaseEnv:       s.Environ(),
		Env:           spec.Env,
		Spawn:         &pol,
		Grace:         grace,
		Limits:        limits,
		NoContainment: !c.Contain,
		Subreaper:     s.opts.Subreaper,
		Logger:        s.log,
	}
}
