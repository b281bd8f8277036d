package ssh_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/ssh"
	"github.com/runbox/runbox/ssh/sshtest"
)

// agentBin is the static runbox-agent built once by TestMain ("" if the
// build failed; agentErr says why).
var agentBin, agentErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runbox-ssh-test-*")
	if err == nil {
		agentBin = filepath.Join(dir, "runbox-agent")
		if agentErr = testproc.BuildAgent(agentBin); agentErr != nil {
			agentBin = ""
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	// Every Env closes its connection and the loops that watch it.
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// open connects with o, closed at the end of the test.
func open(t *testing.T, o ssh.Options) *ssh.Env {
	t.Helper()
	env, err := ssh.New(ctx(t), o)
	if err != nil {
		t.Fatalf("ssh.New(%s): %v", o.Host, err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func run(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	res, err := env.Run(ctx(t), envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

// The conformance suite through the agent on the far side: what holds
// for local holds over ssh.
func TestEnv_Conformance(t *testing.T) {
	d := sshtest.Start(t)
	conformance(t, options(t, d))
}

// conformance runs the conformance suite on environments opened with o,
// each through the agent.
func conformance(t *testing.T, o ssh.Options) {
	envtest.Run(t, func(t *testing.T) envs.Environment {
		env, err := ssh.New(ctx(t), o)
		if err != nil {
			t.Fatalf("ssh.New: %v", err)
		}
		if fb := env.Fallback(); fb != "" {
			t.Fatalf("agent not in use: %s", fb)
		}
		return env
	})
}

// A host whose key known_hosts does not list is refused, with the
// fingerprint and the file; the file is left alone.
func TestEnv_UnknownHostKey(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.KnownHosts = d.KnownHosts(nil)
	_, err := ssh.New(ctx(t), o)
	var he *ssh.HostKeyError
	if !errors.As(err, &he) {
		t.Fatalf("New with an unknown host key = %v; want a *ssh.HostKeyError", err)
	}
	if he.Changed || he.File != o.KnownHosts || !strings.Contains(err.Error(), fingerprint(d)) || !strings.Contains(err.Error(), o.KnownHosts) {
		t.Fatalf("error %q (changed %v, file %s); want unknown, with the fingerprint and %s", err, he.Changed, he.File, o.KnownHosts)
	}
	if b, _ := os.ReadFile(o.KnownHosts); len(b) != 0 {
		t.Fatalf("known_hosts was written without AcceptNew: %q", b)
	}
}

// A changed key is refused even with AcceptNew, and never recorded.
func TestEnv_ChangedHostKey(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	other := sshtest.WriteKey(t, filepath.Join(t.TempDir(), "other"))
	o.KnownHosts = d.KnownHosts(other)
	o.AcceptNew = true
	before, _ := os.ReadFile(o.KnownHosts)
	_, err := ssh.New(ctx(t), o)
	var he *ssh.HostKeyError
	if !errors.As(err, &he) || !he.Changed {
		t.Fatalf("New with a changed host key = %v; want a *ssh.HostKeyError with Changed", err)
	}
	if !strings.Contains(err.Error(), fingerprint(d)) || !strings.Contains(err.Error(), "CHANGED") {
		t.Fatalf("error %q lacks the new fingerprint or says nothing of the change", err)
	}
	if after, _ := os.ReadFile(o.KnownHosts); !bytes.Equal(before, after) {
		t.Fatalf("known_hosts changed after a refused key:\n%s", after)
	}
}

// AcceptNew records an unknown key; the next connection is checked
// against it without AcceptNew.
func TestEnv_AcceptNewHostKey(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.KnownHosts = filepath.Join(t.TempDir(), "sub", "known_hosts") // not there yet
	o.AcceptNew = true
	env := open(t, o)
	if res := run(t, env, "echo hi"); res.Output != "hi\n" {
		t.Fatalf("output %q", res.Output)
	}
	b, err := os.ReadFile(o.KnownHosts)
	if err != nil || !strings.Contains(string(b), "["+"127.0.0.1]:"+strconv.Itoa(d.Port)) {
		t.Fatalf("known_hosts after AcceptNew: %q, %v", b, err)
	}
	o.AcceptNew = false
	open(t, o)
}

// A key the server does not accept fails with an authentication error;
// an encrypted identity file is refused before anything is sent.
func TestEnv_UserKeyRefused(t *testing.T) {
	d := sshtest.Start(t)
	tests := []struct {
		name string
		key  func(p string)
		want func(error) bool
	}{
		{"wrong key", func(p string) { sshtest.WriteKey(t, p) }, func(err error) bool { return strings.Contains(err.Error(), "unable to authenticate") }},
		{"encrypted key", func(p string) { sshtest.EncryptedKey(t, p) }, func(err error) bool {
			return errors.Is(err, ssh.ErrEncryptedKey) && strings.Contains(err.Error(), "ssh-add")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, d)
			p := filepath.Join(t.TempDir(), "id")
			tc.key(p)
			o.Identity = []string{p}
			_, err := ssh.New(ctx(t), o)
			if err == nil || !tc.want(err) {
				t.Fatalf("New with %s = %v", tc.name, err)
			}
		})
	}
}

// sshd dies mid-command: the command fails within seconds with an error
// that says the connection was lost; once sshd is back, the next command
// connects again and says the environment was recreated.
func TestEnv_SSHDKilledMidCommand(t *testing.T) {
	d := sshtest.Start(t)
	env := open(t, options(t, d))
	marker := filepath.Join(t.TempDir(), "started")
	errc := make(chan error, 1)
	go func() {
		_, err := env.Run(ctx(t), envs.Command{Shell: "touch " + marker + "; sleep 60"})
		errc <- err
	}()
	testwait.Within(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	d.Stop()
	var err error
	select {
	case err = <-errc:
	case <-time.After(15 * time.Second):
		t.Fatal("the command did not fail within 15s of sshd's death")
	}
	if err == nil || !errors.Is(err, agent.ErrLost) || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("Run after sshd died = %v; want a lost agent and connection", err)
	}
	// While sshd is down the next command fails at once, and says why.
	if _, err := env.Run(ctx(t), envs.Command{Shell: "true"}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Run with sshd down = %v; want connection refused", err)
	}
	d.Restart()
	res := run(t, env, "echo back")
	if res.Output != "back\n" || !res.EnvironmentRecreated {
		t.Fatalf("after sshd came back: output %q, recreated %v; want back and recreated", res.Output, res.EnvironmentRecreated)
	}
}

// Closing the environment ends what it started on the host, a setsid
// child included.
func TestEnv_CloseKillsRemoteTree(t *testing.T) {
	d := sshtest.Start(t)
	env, err := ssh.New(ctx(t), options(t, d))
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.Start(ctx(t), envs.Command{Shell: "setsid sleep 300 & echo $!; echo ready; wait"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	testwait.Within(t, 30*time.Second, "the pid", func() bool {
		buf := make([]byte, 64)
		n, _ := p.Output().Read(buf)
		out.Write(buf[:n])
		return strings.Contains(out.String(), "ready")
	})
	pid, err := strconv.Atoi(strings.Fields(out.String())[0])
	if err != nil {
		t.Fatalf("pid line %q: %v", out.String(), err)
	}
	if err := env.Close(ctx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The host is this machine: the setsid child must be gone from it.
	testwait.Within(t, 30*time.Second, "the setsid child to die", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		return err != nil || strings.Contains(string(b), "State:\tZ")
	})
}

// Secrets reach the command but no remote argv: /proc/*/cmdline on the
// host never holds them while the command runs.
func TestEnv_SecretsNotInRemoteArgv(t *testing.T) {
	d := sshtest.Start(t)
	secret := "runbox-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	o := options(t, d)
	o.Env = map[string]string{"RB_TEST_ENV_VALUE": secret + "-env"}
	env := open(t, o)
	marker := filepath.Join(t.TempDir(), "started")
	cmd := envs.Command{Shell: `printf '%s %s\n' "$RB_TEST_ENV_VALUE" "$RB_TEST_CMD_VALUE"; touch ` + marker + `; sleep 2`, Env: map[string]string{"RB_TEST_CMD_VALUE": secret + "-cmd"}}
	type answer struct {
		res *envs.Result
		err error
	}
	done := make(chan answer, 1)
	go func() { r, err := env.Run(ctx(t), cmd); done <- answer{r, err} }()
	testwait.Within(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret: %q", p, b)
		}
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if want := secret + "-env " + secret + "-cmd\n"; a.res.Output != want {
		t.Fatalf("output %q; want %q", a.res.Output, want)
	}
}

// Many commands at once share the connection (run with -race).
func TestEnv_ConcurrentCommands(t *testing.T) {
	d := sshtest.Start(t)
	env := open(t, options(t, d))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			res, err := env.Run(ctx(t), envs.Command{Args: []string{"echo", strconv.Itoa(i)}})
			switch {
			case err != nil:
				errs <- err
			case res.Output != strconv.Itoa(i)+"\n":
				errs <- fmt.Errorf("command %d printed %q", i, res.Output)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The uploaded agent is reused while a file of its name (which carries
// its checksum) and size is there, and replaced when the copy on the host
// was altered to another size (TestEnv_DamagedAgentCopyReplaced covers
// the same size).
func TestEnv_AgentUploadVerified(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	open(t, o)
	copies, _ := filepath.Glob(filepath.Join(o.AgentDir, "runbox-agent-*"))
	if len(copies) != 1 {
		t.Fatalf("agent copies on the host: %q; want one", copies)
	}
	st1, _ := os.Stat(copies[0])
	open(t, o)
	if st2, _ := os.Stat(copies[0]); !os.SameFile(st1, st2) {
		t.Fatal("an unchanged agent was uploaded again")
	}
	// A new file in its place: the running agent keeps the old inode.
	os.Remove(copies[0])
	if err := os.WriteFile(copies[0], []byte("#!/bin/sh\necho tampered\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := open(t, o)
	if fb := env.Fallback(); fb != "" {
		t.Fatalf("agent not in use after a tampered copy: %s", fb)
	}
	if res := run(t, env, "echo ok"); res.Output != "ok\n" {
		t.Fatalf("output %q", res.Output)
	}
	if b, _ := os.ReadFile(copies[0]); bytes.Contains(b, []byte("tampered")) {
		t.Fatal("the tampered copy was kept")
	}
}

// Without the agent, each command runs in a session of its own, with
// exit codes, signals, timeouts and the child-environment defaults as
// through the agent. (The whole conformance suite does not apply: the
// fallback has no streaming processes, and, like sshd, waits for a
// grandchild that holds its output open.)
func TestEnv_FallbackCommands(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.NoAgent = true
	env := open(t, o)
	tests := []struct {
		name    string
		cmd     envs.Command
		code    int
		signal  int
		timeout bool
		output  string
	}{
		{name: "exit code", cmd: envs.Command{Shell: "echo out; exit 3"}, code: 3, output: "out\n"},
		{name: "argv", cmd: envs.Command{Args: []string{"printf", "%s|", "a b", "it's"}}, output: "a b|it's|"},
		{name: "killed by a signal", cmd: envs.Command{Shell: "kill -9 $$"}, code: 137, signal: 9},
		{name: "missing dir", cmd: envs.Command{Shell: "true", Dir: "/nonexistent-runbox-dir"}, code: 126},
		{name: "timeout", cmd: envs.Command{Shell: "sleep 30", Timeout: 300 * time.Millisecond}, code: 124, timeout: true},
		{name: "pager neutralised", cmd: envs.Command{Shell: `echo "$PAGER $GIT_PAGER"`}, output: "cat cat\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := env.Run(ctx(t), tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != tc.code || int(res.Signal) != tc.signal || res.TimedOut != tc.timeout {
				t.Fatalf("Run = code %d signal %d timed out %v; want %d %d %v (output %q)", res.Code, res.Signal, res.TimedOut, tc.code, tc.signal, tc.timeout, res.Output)
			}
			if tc.output != "" && res.Output != tc.output {
				t.Fatalf("output %q; want %q", res.Output, tc.output)
			}
			if tc.timeout && time.Since(start) > 15*time.Second {
				t.Fatalf("a timed-out command took %v", time.Since(start))
			}
		})
	}
	t.Run("file transfer", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "sub", "f.bin")
		data := "a\x00b\xff\n"
		if err := env.PutFile(ctx(t), p, strings.NewReader(data), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := env.GetFile(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var b bytes.Buffer
		b.ReadFrom(r)
		if b.String() != data {
			t.Fatalf("round trip %q; want %q", b.String(), data)
		}
	})
}

// The fallback says it is degraded, carries the environment on stdin
// rather than in argv, and honours the command's directory and stdin.
func TestEnv_FallbackDegraded(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.NoAgent = true
	o.Env = map[string]string{"RB_TEST_VALUE": "it's a \"value\"\nwith a newline"}
	env := open(t, o)
	if st := env.Capabilities().State(envs.CapTreeKill); st != envs.Degraded {
		t.Errorf("tree_kill = %v in the fallback; want degraded", st)
	}
	res, err := env.Run(ctx(t), envs.Command{Shell: `printf '%s|' "$RB_TEST_VALUE"; pwd; cat`, Dir: "/tmp", Stdin: strings.NewReader("input")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "it's a \"value\"\nwith a newline|/tmp\ninput"; res.Output != want {
		t.Fatalf("output %q; want %q", res.Output, want)
	}
	if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, " "), "degraded") {
		t.Fatalf("warnings %q; want the degraded mode named", res.Warnings)
	}
}

// When the agent cannot run on the host (here: no static build of it),
// commands still run, through the fallback, which says why.
func TestEnv_FallbackWhenAgentCannotRun(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.AgentBinary = "/bin/true" // dynamically linked: refused as an agent
	env := open(t, o)
	if fb := env.Fallback(); !strings.Contains(fb, "dynamically linked") {
		t.Fatalf("Fallback() = %q; want the reason the agent cannot run", fb)
	}
	if res := run(t, env, "echo ok"); res.Output != "ok\n" {
		t.Fatalf("output %q", res.Output)
	}
	if st := env.Capabilities().State(envs.CapSessionState); st != envs.Unsupported {
		t.Fatalf("session_state = %v in the fallback; want unsupported", st)
	}
}

// A host alias of the OpenSSH client configuration leads to its HostName,
// Port, User and IdentityFile.
func TestEnv_SSHConfigAlias(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.SSHConfig = filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf("Host testbox\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n", d.Port, d.UserKey)
	if err := os.WriteFile(o.SSHConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Host, o.Identity = "testbox", nil
	env := open(t, o)
	if env.Host() != d.Target() {
		t.Fatalf("Host() = %q; want %q", env.Host(), d.Target())
	}
	if res := run(t, env, "whoami"); res.Output != "root\n" {
		t.Fatalf("whoami = %q", res.Output)
	}
}

// A peer that goes silent with the TCP connection up is noticed by the
// keepalives: the running command fails within a few intervals, saying
// so, and the next command connects again.
func TestEnv_SilentPeerKeepalive(t *testing.T) {
	d := sshtest.Start(t)
	o := options(t, d)
	o.KeepaliveInterval = time.Second
	env := open(t, o)
	marker := filepath.Join(t.TempDir(), "started")
	errc := make(chan error, 1)
	go func() {
		_, err := env.Run(ctx(t), envs.Command{Shell: "touch " + marker + "; sleep 60"})
		errc <- err
	}()
	testwait.Within(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	resume := d.Freeze()
	var err error
	select {
	case err = <-errc:
	case <-time.After(15 * time.Second):
		resume()
		t.Fatal("the command did not fail within 15s of the peer going silent")
	}
	resume()
	if err == nil || !strings.Contains(err.Error(), "keepalives") {
		t.Fatalf("Run with a silent peer = %v; want an error about unanswered keepalives", err)
	}
	if res := run(t, env, "echo back"); res.Output != "back\n" || !res.EnvironmentRecreated {
		t.Fatalf("after the silence: output %q, recreated %v", res.Output, res.EnvironmentRecreated)
	}
}
