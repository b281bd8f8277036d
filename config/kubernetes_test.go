package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/config"
)

// TestKubernetes_Decode: every key of the kubernetes section reaches its
// field, sizes and durations parsed.
func TestKubernetes_Decode(t *testing.T) {
	p := write(t, `kubernetes:
  kubeconfig: /k/config
  context: staging
  namespace: agents
  mode: claim
  warm_pool: python
  image: python:3.12-slim
  pull_policy: Never
  runtime_class: gvisor
  cpu: 1.5
  memory: 512M
  non_root: true
  network: none
  task: pr-42
  ready_timeout: 90s
  agent_binary: /a
  cli_binary: /c
  agent_dir: /tmp/x
`)
	cfg, err := config.Load(p, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := config.KubernetesConf{
		Kubeconfig: "/k/config", Context: "staging", Namespace: "agents", Mode: "claim", WarmPool: "python",
		Image: "python:3.12-slim", PullPolicy: "Never", RuntimeClass: "gvisor", CPU: 1.5, Memory: 512 << 20,
		NonRoot: true, Network: "none", Task: "pr-42", ReadyTimeout: config.Duration(90 * time.Second),
		AgentBinary: "/a", CLIBinary: "/c", AgentDir: "/tmp/x",
	}
	if cfg.Kubernetes != want {
		t.Errorf("kubernetes section = %+v\nwant %+v", cfg.Kubernetes, want)
	}
	if err := cfg.Kubernetes.Validate(p); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestKubernetes_Validate: values the types accept but the backend cannot
// use are refused, naming the key.
func TestKubernetes_Validate(t *testing.T) {
	cases := []struct {
		conf config.KubernetesConf
		want string // "" means valid
	}{
		{config.KubernetesConf{}, ""},
		{config.KubernetesConf{Mode: "auto", WarmPool: "p"}, ""},
		{config.KubernetesConf{Mode: "plain", PullPolicy: "IfNotPresent", Network: "none"}, ""},
		{config.KubernetesConf{Mode: "pods"}, "kubernetes.mode"},
		{config.KubernetesConf{Mode: "claim"}, "kubernetes.warm_pool"},
		{config.KubernetesConf{PullPolicy: "never"}, "kubernetes.pull_policy"},
		{config.KubernetesConf{Network: "allowlist"}, "kubernetes.network"},
		{config.KubernetesConf{CPU: -1}, "kubernetes.cpu"},
		{config.KubernetesConf{Memory: -1}, "kubernetes.memory"},
	}
	for _, c := range cases {
		err := c.conf.Validate("f.yaml")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Validate(%+v) = %v; want nil", c.conf, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f.yaml")):
			t.Errorf("Validate(%+v) = %v; want an error naming %s and the file", c.conf, err, c.want)
		}
	}
}
