package service

import (
	"cmp"
	"context"
	"path/filepath"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/singularity"
)

// SingularityOptions are the singularity backend's options for spec, from
// the configuration's singularity section. A task named in
// spec.Settings["task"] (runbox run --task) has its own instance, kept
// running between runs and found again by its name.
func (s *Service) SingularityOptions(spec envs.Spec) singularity.Options {
	c := s.opts.Config.Singularity
	o := singularity.Options{
		Program:       c.Program,
		Image:         cmp.Or(spec.Image, c.Image),
		Contain:       singularity.Contain(c.Contain),
		WritableTmpfs: c.WritableTmpfs,
		Binds:         c.Binds,
		Workspace:     spec.Settings["workspace"],
		Dir:           cmp.Or(spec.Dir, c.Workdir),
		Network:       cmp.Or(spec.Network, c.Network),
		NoUserNS:      c.NoUserNS,
		Task:          cmp.Or(spec.Settings[SettingTask], c.Task),
		Owner:         s.modalOwner(),
		AgentBinary:   c.AgentBinary,
		AgentDir:      c.AgentDir,
		Env:           spec.Env,
		Getenv:        s.opts.Getenv,
		Logger:        s.log,
	}
	if d := s.stateDir(); d != "" {
		o.StateDir = filepath.Join(d, "singularity")
	}
	return o
}

// singularityProvider is the singularity backend's row.
func (s *Service) singularityProvider() envs.Provider {
	p := singularity.Provider(s.SingularityOptions)
	p.Provisioning = s.SingularityProvisioning
	return p
}

// SingularityProvisioning says, for runbox doctor, which program makes the
// instances, its version, and whether it runs them unprivileged (user
// namespaces) or through a setuid installation.
func (s *Service) SingularityProvisioning(ctx context.Context) string {
	o := s.SingularityOptions(envs.Spec{})
	info, err := singularity.Probe(ctx, o)
	if err != nil {
		return err.Error()
	}
	mode := "unprivileged (user namespaces)"
	switch {
	case o.NoUserNS && info.Setuid, !info.UserNS:
		mode = "setuid starter (user namespaces: " + cmp.Or(info.UserNSError, "not asked for") + ")"
	case info.Setuid:
		mode += "; the installation is also setuid"
	}
	return info.Version + " at " + info.Program + ", " + mode
}
