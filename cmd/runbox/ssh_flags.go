package main

import (
	"github.com/spf13/pflag"

	"github.com/runbox/runbox/envs"
)

// sshFlags are the ssh backend's flags: where to connect, with which key,
// and whether an unknown host key may be recorded.
type sshFlags struct {
	host      string
	identity  string
	acceptNew bool
}

func (s *sshFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&s.host, "host", "", "remote host, [user@]host[:port] (ssh backend; default from config ssh.host)")
	f.StringVar(&s.identity, "identity", "", "private key file to offer after the ssh-agent's (ssh backend)")
	f.BoolVar(&s.acceptNew, "accept-new-host-key", false, "record the key of a host known_hosts does not list (ssh backend; a changed key is always refused)")
}

// apply puts the flags into spec.
func (s *sshFlags) apply(spec *envs.Spec) {
	spec.Host = s.host
	if s.identity == "" && !s.acceptNew {
		return
	}
	if spec.Settings == nil {
		spec.Settings = map[string]string{}
	}
	if s.identity != "" {
		spec.Settings["identity"] = s.identity
	}
	if s.acceptNew {
		spec.Settings["accept_new_host_key"] = "true"
	}
}
