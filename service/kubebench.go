package service

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kubernetes"
)

// KubeDirect is client-go's own pod creation and exec against the
// configured cluster (kubernetes.Direct), the baseline of runbox bench's
// kubernetes rows; offered here so that front ends import no backend.
type KubeDirect = kubernetes.Direct

// NewKubeDirect connects as the kubernetes backend would for spec.
func (s *Service) NewKubeDirect(spec envs.Spec) (*KubeDirect, error) {
	return kubernetes.NewDirect(s.KubernetesOptions(spec))
}

// OpenKubePod opens the kubernetes backend for spec through the provider
// table and returns it with its pod's name.
func (s *Service) OpenKubePod(ctx context.Context, spec envs.Spec) (envs.Environment, string, error) {
	env, err := s.providers.Open(ctx, "kubernetes", spec)
	if err != nil {
		return nil, "", err
	}
	k, ok := env.(*kubernetes.Env)
	if !ok {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("service: the kubernetes row opened a %T", env)
	}
	return env, k.PodName(), nil
}
