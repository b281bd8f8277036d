package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kubernetes"
)

// The kubernetes backend's [envs.Spec] settings (from --context and
// --namespace); SettingTask names its task as for docker.
const (
	SettingKubeContext   = "context"
	SettingKubeNamespace = "namespace"
)

// KubernetesOptions are the kubernetes backend's options for spec, from
// the configuration's kubernetes section; spec's image, limits, network,
// task and the context and namespace settings win over it.
func (s *Service) KubernetesOptions(spec envs.Spec) kubernetes.Options {
	c := s.opts.Config.Kubernetes
	o := kubernetes.Options{
		Kubeconfig:   c.Kubeconfig,
		Context:      cmp.Or(spec.Settings[SettingKubeContext], c.Context),
		Namespace:    cmp.Or(spec.Settings[SettingKubeNamespace], c.Namespace),
		Mode:         kubernetes.Mode(c.Mode),
		WarmPool:     c.WarmPool,
		Image:        cmp.Or(spec.Image, c.Image),
		PullPolicy:   c.PullPolicy,
		RuntimeClass: c.RuntimeClass,
		CPU:          c.CPU,
		MemoryBytes:  int64(c.Memory),
		NonRoot:      c.NonRoot,
		NetworkNone:  cmp.Or(spec.Network, c.Network) == "none",
		Owner:        s.modalOwner(),
		Task:         cmp.Or(spec.Settings[SettingTask], c.Task),
		Dir:          spec.Dir,
		Env:          spec.Env,
		AgentBinary:  c.AgentBinary,
		CLIBinary:    c.CLIBinary,
		AgentDir:     c.AgentDir,
		ReadyTimeout: time.Duration(c.ReadyTimeout),
		Getenv:       s.opts.Getenv,
		Logger:       s.log,
	}
	if spec.Limits.CPUs > 0 {
		o.CPU = spec.Limits.CPUs
	}
	if spec.Limits.MemoryBytes > 0 {
		o.MemoryBytes = spec.Limits.MemoryBytes
	}
	if spec.Image != "" && o.Mode == "" {
		// An image asked for by name is a plain pod's: a template's pod
		// has the template's image.
		o.Mode = kubernetes.ModePlain
	}
	return o
}

// kubernetesProvider is the kubernetes backend's row; a network policy
// it cannot make is refused rather than ignored.
func (s *Service) kubernetesProvider() envs.Provider {
	p := kubernetes.Provider(s.KubernetesOptions)
	open := p.New
	p.New = func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
		if n := spec.Network; n != "" && n != "none" {
			return nil, fmt.Errorf("kubernetes: network policy %q: a pod has the cluster's network, or none (a deny-all NetworkPolicy): %w", n, envs.ErrUnsupported)
		}
		return open(ctx, spec)
	}
	p.Provisioning = s.KubernetesProvisioning
	p.Tasks = kubeTasks{s}
	p.TaskOf = func(spec envs.Spec) string { return s.KubernetesOptions(spec).Task }
	p.Reap = func(ctx context.Context) ([]string, error) {
		return kubernetes.Reap(ctx, s.KubernetesOptions(envs.Spec{}))
	}
	return p
}

// KubernetesProvisioning says how the configured cluster hands out
// sandboxes, for runbox doctor: plain pods always; Agent Sandbox claims
// when it serves the SandboxClaim API (and whether the configuration
// names a warm pool to claim from).
func (s *Service) KubernetesProvisioning(ctx context.Context) string {
	o := s.KubernetesOptions(envs.Spec{})
	if err := kubernetes.AgentSandbox(ctx, o); err != nil {
		return "plain pods (the cluster has no Agent Sandbox API: " + StripInternal(err.Error()) + ")"
	}
	if o.WarmPool == "" {
		return "plain pods; Agent Sandbox claims are offered (set kubernetes.warm_pool to claim from a SandboxWarmPool)"
	}
	return "plain pods and Agent Sandbox claims (warm pool " + o.WarmPool + ", mode " + cmp.Or(string(o.Mode), "auto") + ")"
}

// kubeTasks is the kubernetes backend's keeper: the pods and claims of
// this user labelled with a task, in the configured namespace. The
// cluster does not say when a pod was last used, so the reaper keeps
// them.
type kubeTasks struct{ s *Service }

func (k kubeTasks) Tasks(ctx context.Context) ([]TaskInfo, error) {
	ts, err := kubernetes.Tasks(ctx, k.s.KubernetesOptions(envs.Spec{}))
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, TaskInfo{Name: t.Name, Backend: "kubernetes", Created: t.Created, Holds: fmt.Sprintf("%s %s (%s)", t.Kind, t.Object, t.Phase)})
	}
	return out, nil
}

func (k kubeTasks) RemoveTask(ctx context.Context, name string) ([]string, error) {
	what, err := kubernetes.RemoveTask(ctx, k.s.KubernetesOptions(envs.Spec{}), name)
	if errors.Is(err, kubernetes.ErrNoCluster) {
		// No cluster: the task cannot have anything there.
		return nil, fmt.Errorf("%w: %w", err, envs.ErrNotFound)
	}
	return what, err
}

var _ TaskKeeper = kubeTasks{}
