package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/runbox/runbox/cmd/internal/bench"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
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

// sshJobsHost is a test sshd whose sessions get a state and a cache
// directory of their own (the far side's job daemon and the runbox CLI
// uploaded there), and the CLI arguments of a job command against it.
type sshJobsHost struct {
	d      *sshtest.Server
	env    map[string]string
	remote string // the runbox CLI on the far side
}

func startSSHJobsHost(t *testing.T) *sshJobsHost {
	t.Helper()
	dir := t.TempDir()
	state, cache := filepath.Join(dir, "remote-state"), filepath.Join(dir, "remote-cache")
	d := sshtest.Start(t, sshtest.WithEnv("RUNBOX_STATE_DIR", state), sshtest.WithEnv("XDG_CACHE_HOME", cache))
	h := &sshJobsHost{d: d, remote: filepath.Join(cache, "runbox", "agent", "runbox")}
	// The far side's daemon is nobody's child there, on purpose: the
	// test stops it by its path.
	t.Cleanup(func() { testproc.StopDaemons(h.remote) })
	agentBin := filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cliBin := filepath.Join(dir, "runbox")
	build := exec.Command("go", "build", "-trimpath", "-o", cliBin, "github.com/runbox/runbox/cmd/runbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the runbox CLI for the host: %v: %s", err, b)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("ssh:\n  agent_binary: "+agentBin+"\n  cli_binary: "+cliBin+"\n  accept_new: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.env = map[string]string{
		"HOME": filepath.Join(dir, "home"), "SSH_AUTH_SOCK": "", "RUNBOX_CONFIG": cfg,
		// This machine's own job daemon is not involved: a command that
		// reached it would find this empty state directory.
		"RUNBOX_STATE_DIR": filepath.Join(dir, "local-state"),
	}
	return h
}

func (h *sshJobsHost) args(sub string, rest ...string) []string {
	return append([]string{sub, "--backend", "ssh", "--host", h.d.Target(), "--identity", h.d.UserKey}, rest...)
}

// hostProcs is every command line on the host (this machine, in the test).
func hostProcs(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("ps", "-eo", "args").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	return string(b)
}

// hostPIDs lists the processes on the host whose command line starts
// with prefix.
func hostPIDs(t *testing.T, prefix string) []int {
	t.Helper()
	b, err := exec.Command("ps", "-eo", "pid=,args=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var pids []int
	for line := range strings.Lines(string(b)) {
		pid, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(strings.TrimSpace(args), prefix) {
			n, _ := strconv.Atoi(pid)
			pids = append(pids, n)
		}
	}
	return pids
}

// A job started over ssh keeps running when the connection is cut in the
// middle of a `wait` (the sshd processes serving it killed, the agent and
// the relay on the far side gone with them), and afterwards its whole
// output is there, in order, from any offset, with its exit code.
func TestJobsSSH_SurvivesCutConnection(t *testing.T) {
	h := startSSHJobsHost(t)
	needContainerCLI(t)
	flag := filepath.Join(t.TempDir(), "go-on")
	// 1000 lines, a pause until the test says so (after the cut), 1000
	// lines more, slowly.
	job := fmt.Sprintf(`for i in $(seq 1 1000); do echo line $i; done; while [ ! -e %s ]; do sleep 0.05; done; `+
		`for i in $(seq 1001 2000); do echo line $i; case $i in *00) sleep 0.05;; esac; done; exit 3`, flag)
	out, stderr, code := cli(t, "", h.env, h.args("start", "--", job)...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 12 {
		t.Fatalf("start: exit %d, out %q, stderr %q", code, out, stderr)
	}
	testwait.Within(t, 30*time.Second, "the first 1000 lines in the job's log", func() bool {
		out, _, _ := cli(t, "", h.env, h.args("logs", id)...)
		return strings.HasSuffix(out, "line 1000\n")
	})
	type result struct {
		out, stderr string
		code        int
	}
	waited := make(chan result, 1)
	go func() {
		out, stderr, code := cli(t, "", h.env, h.args("wait", "--timeout", "60s", id)...)
		waited <- result{out, stderr, code}
	}()
	// The wait is under way once its relay runs on the far side.
	var relays []int
	testwait.Within(t, 30*time.Second, "the wait's relay on the host", func() bool {
		relays = hostPIDs(t, h.remote+" __relay")
		return len(relays) > 0
	})
	daemons := hostPIDs(t, h.remote+" __daemon")
	if len(daemons) != 1 {
		ps, _ := exec.Command("ps", "-eo", "pid=,args=").Output()
		t.Fatalf("job daemons on the host: %v; want one; processes:\n%s", daemons, ps)
	}
	if n := h.d.Cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	testwait.Within(t, 30*time.Second, "the relays gone with the connection", func() bool {
		for _, pid := range relays {
			if syscall.Kill(pid, 0) == nil {
				return false
			}
		}
		return true
	})
	if syscall.Kill(daemons[0], 0) != nil {
		t.Fatalf("the job daemon %d did not outlive the connection", daemons[0])
	}
	// The interrupted wait reconnects by itself; if its ping is slow it
	// starts a daemon (through a first stage) that finds the registry
	// taken and exits. Once those are gone, the first daemon is the one.
	testwait.Within(t, 30*time.Second, "the first job daemon the only one", func() bool {
		now := hostPIDs(t, h.remote+" __daemon")
		return len(now) == 1 && now[0] == daemons[0]
	})
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The interrupted wait may have reconnected by itself, or failed
	// with the connection; either way a new one sees the end.
	r := <-waited
	if r.code != 3 {
		t.Logf("the wait cut with its connection: exit %d, %q, %q", r.code, r.out, r.stderr)
	}
	out, stderr, code = cli(t, "", h.env, h.args("wait", "--timeout", "60s", id)...)
	if code != 3 || !strings.Contains(out, "exited 3") {
		t.Fatalf("wait after the cut: exit %d, %q, %q; want 3", code, out, stderr)
	}
	var want strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	out, _, _ = cli(t, "", h.env, h.args("logs", id)...)
	if out != want.String() {
		t.Fatalf("logs after the cut: %d bytes, %d lines; want all 2000 lines in order", len(out), strings.Count(out, "\n"))
	}
	off := strings.Index(want.String(), "line 1500\n")
	out, stderr, _ = cli(t, "", h.env, h.args("logs", "--offset", strconv.Itoa(off), id)...)
	if out != want.String()[off:] || !strings.Contains(stderr, "next offset "+strconv.Itoa(want.Len())) {
		t.Fatalf("logs --offset %d: %d bytes (stderr %q); want the last 501 lines", off, len(out), stderr)
	}
	out, _, _ = cli(t, "", h.env, h.args("ps", "-a")...)
	// Other tests' jobs on the same host may be listed too: find ours.
	found := false
	for _, row := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(row); len(f) >= 3 && f[0] == id {
			found = f[1] == "exited" && f[2] == "3"
		}
	}
	if !found {
		t.Fatalf("ps -a over ssh: %q; want %s exited 3", out, id)
	}
}

// kill over ssh takes the job's whole tree on the host down, a
// double-forked setsid child included; a secret in the job's text shows
// in no command line on the host, and the gate runs here first.
func TestJobsSSH_KillAndSecrets(t *testing.T) {
	h := startSSHJobsHost(t)
	needContainerCLI(t)
	const token = "ghp_sshjobsargvcheck12345"
	// runbox itself (this test binary as main), so that it seals its
	// launch environment and knows the token for a secret.
	start := exec.Command(os.Args[0], h.args("start", "--notify", "--", ": "+token+"; ( setsid sleep 7941 & ) ; nohup sleep 7942 >/dev/null 2>&1 & sleep 7943")...)
	start.Env = append(os.Environ(), runMainEnv+"=1", "XDG_CONFIG_HOME=", "GITHUB_TOKEN="+token)
	for k, v := range h.env {
		start.Env = append(start.Env, k+"="+v)
	}
	var stderr strings.Builder
	start.Stderr = &stderr
	b, err := start.Output()
	id := strings.TrimSpace(string(b))
	if err != nil || len(id) != 12 {
		t.Fatalf("start: %v, out %q, stderr %q", err, b, stderr.String())
	}
	testwait.Within(t, 30*time.Second, "the job's three sleeps on the host", func() bool {
		ps := hostProcs(t)
		return strings.Contains(ps, "sleep 7941") && strings.Contains(ps, "sleep 7942") && strings.Contains(ps, "sleep 7943")
	})
	for line := range strings.Lines(hostProcs(t)) {
		if strings.Contains(line, token) {
			t.Errorf("the secret shows in a command line on the host: %s", line)
		}
	}
	if out, stderr, code := cli(t, "", h.env, h.args("kill", id)...); code != 0 || !strings.Contains(out, "killed") {
		t.Fatalf("kill: exit %d, %q %q", code, out, stderr)
	}
	testwait.Within(t, 10*time.Second, "no sleep 794x left on the host", func() bool {
		return !strings.Contains(hostProcs(t), "sleep 794")
	})
	if out, _, _ := cli(t, "", h.env, h.args("ps", "-a")...); !strings.Contains(out, id) || !strings.Contains(out, "killed") {
		t.Fatalf("ps after kill:\n%s", out)
	}
	_, errs, code := cli(t, "", h.env, h.args("start", "--", "rm -rf --no-preserve-root /")...)
	if code != exitRunbox || !strings.Contains(errs, "refused by the command gate") {
		t.Errorf("a hardline command over ssh: exit %d, %q; want the gate's refusal", code, errs)
	}
	out, _, _ := cli(t, "", h.env, h.args("events")...)
	if !strings.Contains(out, id) {
		t.Errorf("events over ssh = %q; want the kill of %s", out, id)
	}
}

// `runbox bench` measures `true` through the ssh backend against the
// OpenSSH client on the same host in the same run: a fresh `ssh HOST
// true`, and `ssh -S SOCKET HOST true` through a ControlMaster the bench
// opens and closes. Without a host both are reported with a note.
func TestBenchSSH_AgainstOpenSSH(t *testing.T) {
	d, dir, cfg := sshBenchHost(t)
	env := map[string]string{"HOME": filepath.Join(dir, "home"), "SSH_AUTH_SOCK": "", "RUNBOX_CONFIG": cfg}
	only := []string{"bench", "--json", "-n", "3", "--only", "ssh-true,ssh-true-vs-controlmaster"}

	out, stderr, code := cli(t, "", env, only...)
	ms := decodeMeasurements(t, out)
	if code != 0 || len(ms) != 2 || ms[0].Note == "" || !strings.Contains(ms[0].Note, "--ssh-host") {
		t.Fatalf("without a host: exit %d, %+v, stderr %q; want two measurements with a note", code, ms, stderr)
	}

	out, stderr, code = cli(t, "", env, append(only, "--ssh-host", d.Target(), "--identity", d.UserKey)...)
	ms = decodeMeasurements(t, out)
	if code != 0 || len(ms) != 2 {
		t.Fatalf("bench: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for _, m := range ms {
		if m.Note != "" || m.N != 3 || m.P50ms <= 0 || m.BaselineP50ms <= 0 || m.Ratio <= 0 || m.Backend != "ssh" {
			t.Errorf("%s: %+v; want times for both sides", m.Name, m)
		}
		t.Logf("%s: p50 %.2f ms, %s p50 %.2f ms, ratio %.3f", m.Name, m.P50ms, m.Baseline, m.BaselineP50ms, m.Ratio)
	}
	// The ControlMaster is gone with the bench: no ssh -M left.
	if ps := hostProcs(t); strings.Contains(ps, "-M -N -S") {
		t.Errorf("a ControlMaster outlived the bench:\n%s", ps)
	}
}

// decodeMeasurements reads the lines of `runbox bench --json`.
func decodeMeasurements(t *testing.T, out string) []bench.Measurement {
	t.Helper()
	var ms []bench.Measurement
	for line := range strings.Lines(out) {
		var m bench.Measurement
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bench --json line %q: %v", line, err)
		}
		ms = append(ms, m)
	}
	return ms
}

// sshBenchHost starts an sshd for a bench test and writes a configuration
// that trusts its host key and uploads a freshly built agent; it returns
// the server, a private directory and the configuration file.
func sshBenchHost(t *testing.T) (*sshtest.Server, string, string) {
	t.Helper()
	d := sshtest.Start(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		integration.Skip(t, "no OpenSSH client: %v", err)
	}
	dir := t.TempDir()
	agentBin := filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	known := d.KnownHosts(d.HostKey)
	if err := os.WriteFile(cfg, []byte("ssh:\n  agent_binary: "+agentBin+"\n  known_hosts: "+known+"\n  ssh_config: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return d, dir, cfg
}

// TestDoctor_SSHNeedsAHost: with no ssh host configured, doctor says ssh
// is not ready and what to set (it said ready, and run --backend ssh then
// failed with "no host given"); with one, it is ready. Run without a
// host fails before trying anything, with the same advice.
func TestDoctor_SSHNeedsAHost(t *testing.T) {
	if p := doctorBackend(t, nil, "ssh"); p.Ready || !strings.Contains(p.Problem, "ssh.host") || !strings.Contains(p.Problem, "not configured") {
		t.Errorf("doctor with no ssh host: %+v; want not ready, naming ssh.host", p)
	}
	if p := doctorBackend(t, map[string]string{"RUNBOX_SSH_HOST": "user@build.example"}, "ssh"); !p.Ready {
		t.Errorf("doctor with RUNBOX_SSH_HOST set: %+v; want ready", p)
	}
	_, errs, code := cli(t, "", nil, "run", "--backend", "ssh", "--", "true")
	if code == 0 || !strings.Contains(errs, "ssh.host") {
		t.Errorf("run --backend ssh with no host: exit %d, %q; want a failure naming ssh.host", code, errs)
	}
}
