package main

import (
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
)

// dockerOptions maps a spec and the configuration to the backend's
// options. Spec.Image (or the configured docker.image) is required;
// Spec.Dir is the directory in the container; Spec.Limits and Spec.Network
// apply to the whole container; Spec.Env travels with each command, never
// in the container's config.
func (a *app) dockerOptions(spec envs.Spec) docker.Options { return a.svc.DockerOptions(spec) }
