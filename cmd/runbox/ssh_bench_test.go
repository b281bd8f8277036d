package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// `runbox bench --only ssh.oneshot` measures what a tool that shells out
// to runbox pays per command over ssh — a runbox process of its own that
// connects, finds its agent on the host, runs `true` and exits — against
// `ssh HOST true` in the same run, and reports both (the times are the
// product, not asserted: a loaded machine must not fail this).
func TestBenchSSH_OneShot(t *testing.T) {
	d, dir, cfg := sshBenchHost(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A real runbox process: the measurement starts runbox processes of
	// its own (this binary, playing runbox).
	cmd := exec.Command(exe, "bench", "--json", "-n", "2", "--only", "ssh.oneshot", "--ssh-host", d.Target(), "--identity", d.UserKey)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "HOME="+filepath.Join(dir, "home"), "SSH_AUTH_SOCK=", "RUNBOX_CONFIG="+cfg, "XDG_CONFIG_HOME=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v: %s", err, errb.String())
	}
	ms := decodeMeasurements(t, out.String())
	if len(ms) != 1 {
		t.Fatalf("bench printed %q; want one measurement", out.String())
	}
	m := ms[0]
	if m.Name != "ssh.oneshot" || m.Backend != "ssh" || m.Note != "" || m.N != 2 || m.P50ms <= 0 || m.BaselineP50ms <= 0 || m.Ratio <= 0 || m.Baseline != "ssh HOST true" {
		t.Fatalf("measurement %+v; want times for both sides", m)
	}
	t.Logf("ssh.oneshot: p50 %.1f ms, ssh HOST true p50 %.1f ms, ratio %.2f", m.P50ms, m.BaselineP50ms, m.Ratio)
}
