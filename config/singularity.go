package config

import (
	"fmt"
	"slices"
)

// SingularityConf configures the singularity backend (the `singularity:`
// section): Apptainer (or SingularityCE) instances with the runbox agent
// inside. See docs/singularity.md.
type SingularityConf struct {
	// Program is the apptainer or singularity program (a path or a name
	// on PATH). Empty means the first of apptainer and singularity found.
	Program string `yaml:"program"`
	// Image is a SIF file, a sandbox directory, or a reference the program
	// takes (docker://…, docker-daemon:…). A spec's image wins.
	Image string `yaml:"image"`
	// Contain is containall (the default: own IPC namespace, minimal
	// /dev, no host home or /tmp), contain (the host's IPC namespace), or
	// none (the host's home and /tmp too).
	Contain string `yaml:"contain"`
	// WritableTmpfs lays a tmpfs over the image so commands may write
	// anywhere in it (gone when the instance stops).
	WritableTmpfs bool `yaml:"writable_tmpfs"`
	// Binds are more host paths bound into instances ("src[:dest[:ro]]").
	Binds []string `yaml:"binds"`
	// Network is the instances' network when a spec names none: "" the
	// host's, or none (loopback only).
	Network string `yaml:"network"`
	// NoUserNS leaves out --userns, so a setuid installation uses its
	// setuid starter.
	NoUserNS bool `yaml:"no_userns"`
	// Workdir is the initial working directory in the instance; a spec's
	// directory wins.
	Workdir string `yaml:"workdir"`
	// Task names the task whose instance is kept running between runs; a
	// spec's task (--task) wins.
	Task        string `yaml:"task"`
	AgentBinary string `yaml:"agent_binary"`
	AgentDir    string `yaml:"agent_dir"`
}

// Validate checks the section's values; where names the configuration.
func (c SingularityConf) Validate(where string) error {
	switch {
	case !slices.Contains([]string{"", "containall", "contain", "none"}, c.Contain):
		return fmt.Errorf("config: %s: singularity.contain must be containall, contain or none, got %q", where, c.Contain)
	case c.Network != "" && c.Network != "none":
		return fmt.Errorf("config: %s: singularity.network must be empty (the host's) or none, got %q", where, c.Network)
	}
	return nil
}
