package config

import (
	"fmt"
	"slices"
)

// VercelConf configures the vercel backend (the `vercel:` section;
// docs/vercel.md). Credentials are not here: they come from VERCEL_TOKEN
// (or VERCEL_OIDC_TOKEN), VERCEL_TEAM_ID and VERCEL_PROJECT_ID in
// runbox's launch environment and go to Vercel's API only.
type VercelConf struct {
	// Runtime is the sandbox image (node22, node24, python3.13); empty
	// means Vercel's default.
	Runtime string `yaml:"runtime"`
	// VCPUs sizes the sandbox (2 GB of memory per vCPU); 0 means Vercel's
	// default (or --cpus, rounded up).
	VCPUs int `yaml:"vcpus"`
	// Timeout is how long a sandbox session may run before Vercel stops
	// it; 0 means Vercel's default (5m).
	Timeout Duration `yaml:"timeout"`
	// Ports are exposed through Vercel's routes (at most 15).
	Ports []int `yaml:"ports"`
	// Network is allow-all or deny-all; empty means allow-all (deny-all
	// when the spec asks for network none).
	Network string `yaml:"network"`
	// AllowDomains lets the sandbox reach only these domains.
	AllowDomains []string `yaml:"allow_domains"`
	// Task keeps one named sandbox for this task between runs, as --task
	// does; Persistent (implied by --task) makes it persistent, so Vercel
	// snapshots it when it stops and resumes it at the next open.
	Task       string `yaml:"task"`
	Persistent bool   `yaml:"persistent"`
	// KeepRunning leaves a persistent sandbox running at close.
	KeepRunning bool `yaml:"keep_running"`
	// AgentBinary and AgentDir: the static agent to copy in (empty:
	// found or built) and where (empty: /tmp/.runbox).
	AgentBinary string `yaml:"agent_binary"`
	AgentDir    string `yaml:"agent_dir"`
}

// Validate checks the section; where names the file for the message.
func (v VercelConf) Validate(where string) error {
	switch {
	case !slices.Contains([]string{"", "allow-all", "deny-all"}, v.Network):
		return fmt.Errorf("config: %s: vercel.network %q: want allow-all or deny-all", where, v.Network)
	case v.Network == "deny-all" && len(v.AllowDomains) > 0:
		return fmt.Errorf("config: %s: vercel.network deny-all and vercel.allow_domains exclude each other", where)
	case v.VCPUs < 0 || v.Timeout < 0:
		return fmt.Errorf("config: %s: vercel.vcpus and vercel.timeout must be >= 0", where)
	case len(v.Ports) > 15:
		return fmt.Errorf("config: %s: vercel.ports: at most 15", where)
	case v.Persistent && v.Task == "":
		return fmt.Errorf("config: %s: vercel.persistent needs vercel.task", where)
	}
	return nil
}
