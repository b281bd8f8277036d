package config

// KubernetesConf configures the kubernetes backend (the `kubernetes:` section).
type KubernetesConf struct{}
