package ssh_test

import (
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/ssh/sshtest"
)

// startAgent runs OpenSSH's ssh-agent holding key, stopped by PID at the
// end of the test, and returns its socket.
func startAgent(t *testing.T, key any) string {
	t.Helper()
	path, err := exec.LookPath("ssh-agent")
	if err != nil {
		integration.Skip(t, "no ssh-agent: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(path, "-D", "-a", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var conn net.Conn
	testwait.Within(t, 10*time.Second, "ssh-agent to listen", func() bool {
		conn, err = net.Dial("unix", sock)
		return err == nil
	})
	defer conn.Close()
	if err := agent.NewClient(conn).Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatalf("add the key to ssh-agent: %v", err)
	}
	return sock
}

// The ssh-agent's keys authenticate; an encrypted identity file whose key
// the agent holds is not refused (the agent signs for it).
func TestEnv_AgentAuth(t *testing.T) {
	d := sshtest.Start(t)
	b, err := os.ReadFile(d.UserKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.ParseRawPrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	sock := startAgent(t, key)
	enc := filepath.Join(t.TempDir(), "id_encrypted")
	blk, err := gossh.MarshalPrivateKeyWithPassphrase(key, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(enc, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "SSH_AUTH_SOCK" {
			return sock
		}
		return os.Getenv(k)
	}
	for name, ids := range map[string][]string{"agent only": {}, "encrypted file the agent holds": {enc}} {
		t.Run(name, func(t *testing.T) {
			o := options(t, d)
			o.NoAgentAuth, o.Getenv, o.Identity = false, getenv, ids
			env := open(t, o)
			if res := run(t, env, "echo in"); res.Output != "in\n" {
				t.Fatalf("output %q", res.Output)
			}
		})
	}
}
