package config

import (
	"fmt"
	"slices"
)

// KubernetesConf configures the kubernetes backend (the `kubernetes:`
// section; docs/kubernetes.md). Credentials are not here: they are read
// where kubectl reads them (the kubeconfig file, else the in-cluster
// service account) and never reach a pod.
type KubernetesConf struct {
	// Kubeconfig is the kubeconfig file; empty means as kubectl
	// ($KUBECONFIG, else ~/.kube/config, else in-cluster).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `yaml:"context"`
	// Namespace is where pods and claims are made; empty means the
	// context's, else "default".
	Namespace string `yaml:"namespace"`
	// Mode is plain (a pod from image), claim (a SandboxClaim from
	// warm_pool) or auto (claim when warm_pool is set and the cluster has
	// the Agent Sandbox API, else plain); empty means auto.
	Mode string `yaml:"mode"`
	// WarmPool is the SandboxWarmPool claims name; the pool names the
	// SandboxTemplate (replicas 0: a cold start from the template).
	WarmPool string `yaml:"warm_pool"`
	// Image is the plain pod's image; empty means the backend's default.
	Image string `yaml:"image"`
	// PullPolicy is Always, IfNotPresent or Never; empty means
	// IfNotPresent.
	PullPolicy string `yaml:"pull_policy"`
	// RuntimeClass is the pod's runtimeClassName (gvisor, kata); empty
	// means the cluster's default runtime.
	RuntimeClass string `yaml:"runtime_class"`
	// CPU (cores) and Memory are the pod's requests and limits; zero
	// means none (the limits section, or --cpus/--memory, when set).
	CPU    float64 `yaml:"cpu"`
	Memory Size    `yaml:"memory"`
	// NonRoot runs the pod's container as uid 65534 (runAsNonRoot).
	NonRoot bool `yaml:"non_root"`
	// Network "none" adds a deny-all NetworkPolicy to each pod; empty
	// means the cluster's pod network.
	Network string `yaml:"network"`
	// Task keeps one pod (or claim) for this task between runs, as
	// --task does.
	Task string `yaml:"task"`
	// ReadyTimeout bounds waiting for a pod to run; 0 means 3m.
	ReadyTimeout Duration `yaml:"ready_timeout"`
	// AgentBinary, CLIBinary and AgentDir: the static agent and CLI to
	// copy in (empty: found or built), and where (empty: /.runbox, or
	// /tmp/.runbox with non_root).
	AgentBinary string `yaml:"agent_binary"`
	CLIBinary   string `yaml:"cli_binary"`
	AgentDir    string `yaml:"agent_dir"`
}

// Validate checks the section; where names the file for the message.
func (k KubernetesConf) Validate(where string) error {
	switch {
	case !slices.Contains([]string{"", "auto", "plain", "claim"}, k.Mode):
		return fmt.Errorf("config: %s: kubernetes.mode must be auto, plain or claim, got %q", where, k.Mode)
	case k.Mode == "claim" && k.WarmPool == "":
		return fmt.Errorf("config: %s: kubernetes.mode claim needs kubernetes.warm_pool (a SandboxWarmPool)", where)
	case !slices.Contains([]string{"", "Always", "IfNotPresent", "Never"}, k.PullPolicy):
		return fmt.Errorf("config: %s: kubernetes.pull_policy must be Always, IfNotPresent or Never, got %q", where, k.PullPolicy)
	case !slices.Contains([]string{"", "none"}, k.Network):
		return fmt.Errorf("config: %s: kubernetes.network must be none or empty, got %q", where, k.Network)
	case k.CPU < 0 || k.Memory < 0 || k.ReadyTimeout < 0:
		return fmt.Errorf("config: %s: kubernetes.cpu, kubernetes.memory and kubernetes.ready_timeout must be >= 0", where)
	}
	return nil
}
