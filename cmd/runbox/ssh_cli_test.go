package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/ssh/sshtest"
)

// TestRunSSH_HostKeyThenCommand: `run --backend ssh --host` against a real
// sshd refuses a host known_hosts does not list, naming its fingerprint and
// the file; --accept-new-host-key records it, and the command runs on the
// host through the agent.
func TestRunSSH_HostKeyThenCommand(t *testing.T) {
	d := sshtest.Start(t)
	dir := t.TempDir()
	agentBin := filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("ssh:\n  agent_binary: "+agentBin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	env := map[string]string{"HOME": home, "SSH_AUTH_SOCK": "", "RUNBOX_CONFIG": cfg}
	args := []string{"run", "--backend", "ssh", "--host", d.Target(), "--identity", d.UserKey}

	_, stderr, code := cli(t, "", env, append(args, "--", "echo hi")...)
	known := filepath.Join(home, ".ssh", "known_hosts")
	if code == 0 || !strings.Contains(stderr, gossh.FingerprintSHA256(d.HostKey)) || !strings.Contains(stderr, known) {
		t.Fatalf("unknown host: exit %d, stderr %q; want a refusal with the fingerprint and %s", code, stderr, known)
	}

	out, stderr, code := cli(t, "", env, append(args, "--accept-new-host-key", "--", "echo hi from $(uname -s)")...)
	if code != 0 || out != "hi from Linux\n" {
		t.Fatalf("accept new: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, err := os.ReadFile(known); err != nil || !strings.Contains(string(b), "ssh-ed25519") {
		t.Fatalf("known_hosts after --accept-new-host-key: %q, %v", b, err)
	}
	out, stderr, code = cli(t, "", env, append(args, "--", "exit 7")...)
	if code != 7 {
		t.Fatalf("exit 7 over ssh: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
