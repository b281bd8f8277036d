package service

import (
	"cmp"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/vercel"
)

// VercelOptions are the vercel backend's options for spec, from the
// configuration's vercel section; the credentials are read through the
// caller's launch environment (Options.Getenv), never from the
// environment children get. A task named in spec.Settings["task"]
// (runbox run --task) is persistent: its named sandbox is stopped at
// close, snapshotted by Vercel, and resumed at its next open.
func (s *Service) VercelOptions(spec envs.Spec) (vercel.Options, error) {
	c := s.opts.Config.Vercel
	creds, err := vercel.CredentialsFrom(s.opts.Getenv)
	if err != nil {
		return vercel.Options{}, err
	}
	o := vercel.Options{
		Credentials:  creds,
		Runtime:      cmp.Or(spec.Image, c.Runtime),
		VCPUs:        c.VCPUs,
		Timeout:      time.Duration(c.Timeout),
		Ports:        c.Ports,
		Network:      c.Network,
		AllowDomains: c.AllowDomains,
		Owner:        s.modalOwner(),
		Task:         c.Task,
		Persistent:   c.Persistent,
		KeepRunning:  c.KeepRunning,
		Dir:          spec.Dir,
		Env:          spec.Env,
		AgentBinary:  c.AgentBinary,
		AgentDir:     c.AgentDir,
		Logger:       s.log,
	}
	if spec.Network == "none" {
		o.Network, o.AllowDomains = vercel.NetworkDenyAll, nil
	}
	if spec.Limits.CPUs > 0 && o.VCPUs == 0 {
		o.VCPUs = int(spec.Limits.CPUs + 0.999)
	}
	if t := spec.Settings["task"]; t != "" {
		o.Task, o.Persistent = t, true
	}
	return o, nil
}
