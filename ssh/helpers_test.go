package ssh_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/runbox/runbox/ssh"
	"github.com/runbox/runbox/ssh/sshtest"
)

// options are Options for d: its host key known, its user key offered,
// no ssh-agent, the agent uploaded to a directory of the test's.
func options(t *testing.T, d *sshtest.Server) ssh.Options {
	t.Helper()
	if agentBin == "" {
		t.Fatalf("no agent binary: %v", agentErr)
	}
	return ssh.Options{
		Host:              d.Target(),
		Identity:          []string{d.UserKey},
		NoAgentAuth:       true,
		KnownHosts:        d.KnownHosts(d.HostKey),
		AgentBinary:       agentBin,
		AgentDir:          filepath.Join(d.Dir, "cache", "runbox", "agent"),
		KeepaliveInterval: time.Second,
	}
}

// ctx is a test context bounded by a generous hang limit.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// fingerprint is d's host key fingerprint.
func fingerprint(d *sshtest.Server) string { return gossh.FingerprintSHA256(d.HostKey) }
