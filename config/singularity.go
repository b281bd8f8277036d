package config

// SingularityConf configures the singularity backend (the `singularity:` section).
type SingularityConf struct{}
