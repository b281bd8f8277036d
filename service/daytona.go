package service

import (
	"github.com/runbox/runbox/daytona"
	"github.com/runbox/runbox/envs"
)

// DaytonaOptions are the daytona backend's options for spec, from the
// configuration's daytona section; the credentials are read through the
// caller's environment (Options.Getenv), never from the environment
// children get.
func (s *Service) DaytonaOptions(spec envs.Spec) (daytona.Options, error) {
	c := s.opts.Config.Daytona
	creds, err := daytona.CredentialsFrom(s.opts.Getenv)
	if err != nil {
		return daytona.Options{}, err
	}
	image := spec.Image
	if image == "" {
		image = c.Image
	}
	task := spec.Settings["task"]
	if task == "" {
		task = c.Task
	}
	owner := s.opts.Getenv("RUNBOX_OWNER")
	if owner == "" {
		owner = "user"
	}
	policy := s.SpawnPolicy()
	o := daytona.Options{
		Credentials: creds,
		Image:       image, Snapshot: c.Snapshot,
		CPU: c.CPU, MemoryGB: c.Memory, DiskGB: c.Disk,
		Owner: owner, Task: task,
		Persistent: c.Persistent || spec.Settings["persistent"] == "true", KeepRunning: c.KeepRunning,
		NetworkBlockAll: spec.Network == "none", NetworkAllowList: c.NetworkAllowList,
		Dir: spec.Dir, Env: spec.Env, Spawn: &policy, Logger: s.log,
		AgentBinary: c.AgentBinary, AgentDir: c.AgentDir, NoAgent: c.NoAgent,
	}
	if spec.Limits.CPUs > 0 && o.CPU == 0 {
		o.CPU = int(spec.Limits.CPUs + 0.999)
	}
	if spec.Limits.MemoryBytes > 0 && o.MemoryGB == 0 {
		o.MemoryGB = int((spec.Limits.MemoryBytes + 1<<30 - 1) >> 30)
	}
	return o, nil
}
