package service

import (
	"context"
	"errors"

	"github.com/runbox/runbox/envs"
)

// ErrNoImage: a container backend was asked for an environment without
// an image to make it from (no --image, no image in the configuration).
var ErrNoImage = errors.New("service: no container image: give one with --image IMAGE (or the image setting of a server's session), or set docker.image in the configuration")

// ErrNoSSHHost is the ssh backend's missing host.
var ErrNoSSHHost = errors.New("service: ssh is not configured: no host; set ssh.host in the configuration (or RUNBOX_SSH_HOST) to [user@]host[:port], or give --host")

// SpecProblem says what backend lacks to open an environment for spec
// with this configuration, before anything is tried: nil when nothing is
// missing. runbox doctor reports it as the backend not being ready.
func (s *Service) SpecProblem(backend string, spec envs.Spec) error {
	p, err := s.providers.Lookup(backend)
	if err != nil || p.Missing == nil {
		return nil // Open says what an unknown backend is
	}
	return p.Missing(spec)
}

// open opens backend's environment for spec through the provider table,
// saying first, in the user's terms, what is missing.
func (s *Service) open(ctx context.Context, backend string, spec envs.Spec) (envs.Environment, error) {
	if err := s.SpecProblem(backend, spec); err != nil {
		return nil, err
	}
	return s.providers.Open(ctx, backend, spec)
}
