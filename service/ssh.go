package service

import (
	"cmp"
	"strconv"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/ssh"
)

// SSHOptions are the ssh backend's options for spec, from the
// configuration's ssh section; spec.Host, and the settings "identity" and
// "accept_new_host_key" (from flags), win over it.
func (s *Service) SSHOptions(spec envs.Spec) ssh.Options {
	c := s.opts.Config.SSH
	o := ssh.Options{
		Host:              cmp.Or(spec.Host, c.Host),
		User:              c.User,
		Port:              c.Port,
		KnownHosts:        c.KnownHosts,
		SSHConfig:         c.SSHConfig,
		AcceptNew:         c.AcceptNew,
		AgentBinary:       c.AgentBinary,
		CLIBinary:         c.CLIBinary,
		NoAgent:           c.NoAgent,
		KeepaliveInterval: time.Duration(c.Keepalive),
		Dir:               spec.Dir,
		Env:               spec.Env,
		Getenv:            s.Getenv,
		Logger:            s.log,
	}
	if id := cmp.Or(spec.Settings["identity"], c.IdentityFile); id != "" {
		o.Identity = []string{id}
	}
	if v, err := strconv.ParseBool(spec.Settings["accept_new_host_key"]); err == nil && v {
		o.AcceptNew = true
	}
	return o
}
