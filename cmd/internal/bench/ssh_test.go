package bench

import (
	"slices"
	"testing"
)

// TestSSHTarget_ReachesTheBackendAndTheCLI: the target's key and host-key
// policy reach the ssh backend's options (through the settings the
// service reads) and the `runbox run` of ssh.oneshot (through its flags);
// the zero target leaves both to the configuration. Breaks if either
// side's names change without the other.
func TestSSHTarget_ReachesTheBackendAndTheCLI(t *testing.T) {
	svc := newService(t, nil)
	full := SSHTarget{Host: "u@h:2222", Identity: "/k/id", AcceptNewHostKey: true}
	o := svc.SSHOptions(full.spec())
	if o.Host != "u@h:2222" || !slices.Equal(o.Identity, []string{"/k/id"}) || !o.AcceptNew {
		t.Errorf("ssh options for %+v = host %q, identity %q, accept new %v", full, o.Host, o.Identity, o.AcceptNew)
	}
	if got, want := full.runArgs(), []string{"--host", "u@h:2222", "--identity", "/k/id", "--accept-new-host-key"}; !slices.Equal(got, want) {
		t.Errorf("runArgs = %q; want %q", got, want)
	}
	zero := SSHTarget{}
	if o := svc.SSHOptions(zero.spec()); o.Host != "" || len(o.Identity) != 0 || o.AcceptNew {
		t.Errorf("ssh options for the zero target = %+v; want the configuration's (none)", o)
	}
	if args := zero.runArgs(); len(args) != 0 {
		t.Errorf("runArgs of the zero target = %q; want none", args)
	}
}
