package ssh_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/ssh"
	"github.com/runbox/runbox/ssh/sshtest"
)

// sessions counts the sessions sshd has started so far (its log, at
// LogLevel VERBOSE, has one "Starting session" line each).
func sessions(t *testing.T, d *sshtest.Server) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("Starting session:"))
}

// A one-shot command on a host that has the agent already — connect,
// run, close, as `runbox run --backend ssh` does — costs one session:
// the probe, the check for the agent and the agent itself share it,
// where they took three (a session is most of what `ssh HOST true`
// costs). The agent still starts in Options.Dir without sshd's
// SSH_CONNECTION, as a session of its own would have it.
func TestEnv_OneShotIsOneSession(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.Dir = t.TempDir()
	first := open(t, o) // uploads the agent
	first.Close(context.Background())

	before := sessions(t, d)
	env, err := ssh.New(ctx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Run(ctx(t), envs.Command{Shell: `pwd; echo "[$SSH_CONNECTION]"`})
	env.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Dir + "\n[]\n"; res.Output != want {
		t.Errorf("output %q; want %q (the directory, no SSH_CONNECTION)", res.Output, want)
	}
	if n := sessions(t, d) - before; n != 1 {
		t.Errorf("a one-shot command took %d sessions; want 1", n)
	}
}

// The agent on the host is kept by its name (which carries its SHA-256)
// and size, without reading it; a copy damaged in place with the same
// size does not start, and is then checked, replaced, and run — the
// agent is not given up for the native fallback.
func TestEnv_DamagedAgentCopyReplaced(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	open(t, o)
	copies, _ := filepath.Glob(filepath.Join(o.AgentDir, "runbox-agent-*"))
	if len(copies) != 1 {
		t.Fatalf("agent copies on the host: %q; want one", copies)
	}
	fi, err := os.Stat(copies[0])
	if err != nil {
		t.Fatal(err)
	}
	junk := append([]byte("#!/bin/sh\nexit 9\n"), bytes.Repeat([]byte("#"), int(fi.Size())-17)...)
	os.Remove(copies[0]) // a running agent keeps the old inode
	if err := os.WriteFile(copies[0], junk, 0o755); err != nil {
		t.Fatal(err)
	}
	env := open(t, o)
	if fb := env.Fallback(); fb != "" {
		t.Fatalf("agent not in use after a damaged copy of the same size: %s", fb)
	}
	if res := run(t, env, "echo ok"); res.Output != "ok\n" {
		t.Fatalf("output %q", res.Output)
	}
	if b, _ := os.ReadFile(copies[0]); strings.HasPrefix(string(b), "#!/bin/sh\nexit 9") {
		t.Fatal("the damaged copy was kept")
	}
}
