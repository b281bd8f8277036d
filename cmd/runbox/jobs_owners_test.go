package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

// runboxSelf is the shell text that runs this test binary as runbox.
func runboxSelf(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "'" + strings.ReplaceAll(exe, "'", `'\''`) + "'"
}

// sessionClients are two serve sessions on the test's daemon: clients
// that hold a token for their owner, as service.Session.Jobs makes them.
// Cleanup kills their jobs (the CLI's cleanup cannot see them).
func sessionClients(t *testing.T, env map[string]string) (a, b *procregistry.Client) {
	t.Helper()
	if _, errs, code := jcli(t, env, "ps"); code != 0 { // starts the daemon
		t.Fatalf("ps: %s", errs)
	}
	c := &procregistry.Client{Path: daemonSocket(env["RUNBOX_STATE_DIR"])}
	a, b = c.As("mcp-A"), c.As("mcp-B")
	t.Cleanup(func() {
		for _, s := range []*procregistry.Client{a, b} {
			list, _ := s.List(context.Background(), "")
			for _, in := range list {
				if !in.Status.Finished() {
					s.Kill(context.Background(), in.ID)
				}
			}
		}
	})
	return a, b
}

// runJob starts shell as c's job and returns its output once it ended.
func runJob(t *testing.T, c *procregistry.Client, shell string, env map[string]string) string {
	t.Helper()
	in, err := c.Start(t.Context(), procregistry.StartRequest{Shell: shell, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if done, ok, err := c.Wait(ctx, in.ID, 0); err != nil || !ok {
		t.Fatalf("wait for %s: %+v %v", in.ID, done, err)
	}
	ch, err := c.ReadLog(t.Context(), in.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(ch.Data)
}

// section returns what the attack script printed between the lines
// "@@name" and the next "@@..." line.
func section(out, name string) string {
	_, rest, ok := strings.Cut("\n"+out, "\n@@"+name+"\n")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "\n@@")
	return s
}

// A command of one serve session runs the real runbox CLI against
// another session's job — ps, logs, submit, kill — knowing the daemon's
// state directory: every call is refused, and B's job runs on, unwritten
// and unread. The same script run by a job of B works (the control: the
// attack does reach the job when the caller is its owner's).
func TestJobs_SessionCannotReachAnotherSessionsJob(t *testing.T) {
	env := jobsEnv(t)
	a, b := sessionClients(t, env)
	victim, err := b.Start(t.Context(), procregistry.StartRequest{Shell: `echo b-secret-output; while read l; do echo "got $l"; done`})
	if err != nil {
		t.Fatal(err)
	}
	self := runboxSelf(t)
	script := fmt.Sprintf(`R=%s
printf '@@%%s\n' ps; $R ps --all; echo "rc=$?"
printf '@@%%s\n' logs; $R logs %[2]s 2>&1; echo "rc=$?"
printf '@@%%s\n' submit; $R submit %[2]s from-a 2>&1; echo "rc=$?"
printf '@@%%s\n' kill; $R kill %[2]s 2>&1; echo "rc=$?"
printf '@@%%s\n' end`, self, victim.ID)
	// The attacker knows where the state is (it does not get it from
	// runbox: see TestJobs_NoRunboxVariablesInCommands).
	cliEnv := map[string]string{runMainEnv: "1", "RUNBOX_STATE_DIR": env["RUNBOX_STATE_DIR"], "GORACE": "atexit_sleep_ms=0"}

	out := runJob(t, a, script, cliEnv)
	if ps := section(out, "ps"); strings.Contains(ps, victim.ID) || !strings.Contains(ps, "rc=0") {
		t.Errorf("ps in A's job:\n%s", ps)
	}
	for _, op := range []string{"logs", "submit", "kill"} {
		if s := section(out, op); !strings.Contains(s, "not found") || strings.Contains(s, "rc=0") {
			t.Errorf("%s of B's job from A's job: %q; want refused (not found)", op, s)
		}
	}
	if strings.Contains(out, "b-secret-output") {
		t.Errorf("A's job read B's output:\n%s", out)
	}
	p, err := b.Poll(t.Context(), victim.ID)
	if err != nil || p.Status != procregistry.StatusRunning || strings.Contains(p.Preview, "from-a") {
		t.Fatalf("B's job after A's attack: %s %q %v; want running and unwritten", p.Status, p.Preview, err)
	}

	// Control: the same script in B.
	out = runJob(t, b, script, cliEnv)
	if ps := section(out, "ps"); !strings.Contains(ps, victim.ID) {
		t.Errorf("ps in B's job does not list B's job:\n%s", ps)
	}
	if s := section(out, "logs"); !strings.Contains(s, "b-secret-output") {
		t.Errorf("logs in B's job: %q", s)
	}
	if s := section(out, "kill"); !strings.Contains(s, victim.ID+" killed") {
		t.Errorf("kill in B's job: %q", s)
	}
	ch, err := b.ReadLog(t.Context(), victim.ID, 0, 0)
	if err != nil || !strings.Contains(string(ch.Data), "got from-a") {
		t.Errorf("B's job after B's write: %q %v", ch.Data, err)
	}
}

// A user's CLI outside any session cannot see or touch a session's jobs
// either, not even by naming the session's owner; its own jobs stay its
// own (the control).
func TestJobs_CLICannotReachSessionJobs(t *testing.T) {
	env := jobsEnv(t)
	_, b := sessionClients(t, env)
	victim, err := b.Start(t.Context(), procregistry.StartRequest{Shell: "sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := jcli(t, env, "start", "--", "sleep 600")
	mine := strings.TrimSpace(out)
	for _, args := range [][]string{{"ps", "--all"}, {"ps", "--owner", "mcp-B"}} {
		out, errs, _ := jcli(t, env, args...)
		if strings.Contains(out, victim.ID) {
			t.Errorf("%v listed B's job:\n%s%s", args, out, errs)
		}
	}
	if out, _, _ := jcli(t, env, "ps", "--all"); !strings.Contains(out, mine) {
		t.Errorf("ps --all lost the CLI's own job:\n%s", out)
	}
	envB := map[string]string{"RUNBOX_STATE_DIR": env["RUNBOX_STATE_DIR"], "RUNBOX_OWNER": "mcp-B"}
	for _, args := range [][]string{{"logs", victim.ID}, {"kill", victim.ID}, {"write", victim.ID, "x"}} {
		if _, errs, code := jcli(t, envB, args...); code == 0 || !strings.Contains(errs, "not found") {
			t.Errorf("%v as RUNBOX_OWNER=mcp-B: exit %d, %q; want not found", args, code, errs)
		}
	}
	if p, err := b.Poll(t.Context(), victim.ID); err != nil || p.Status != procregistry.StatusRunning {
		t.Errorf("B's job: %s %v; want running", p.Status, err)
	}
}

// Runbox's own variables never reach a command: not a job's (the daemon
// holds RUNBOX_STATE_DIR in its environment) and not a foreground
// command's (runbox holds whatever the user exported).
func TestJobs_NoRunboxVariablesInCommands(t *testing.T) {
	env := jobsEnv(t)
	state := env["RUNBOX_STATE_DIR"]
	// What runbox has in its environment today when it runs a command.
	set := map[string]string{
		"RUNBOX_STATE_DIR": state, "RUNBOX_OWNER": "tester", runMainEnv: "1",
		"RUNBOX_INTEGRATION": "optional", "RUNBOX_BACKEND": "local", "RUNBOX_TIMEOUT": "20s",
	}
	check := func(t *testing.T, out string) {
		t.Helper()
		if !strings.Contains(out, "PATH=") {
			t.Fatalf("env printed no PATH: %q", out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.ToUpper(l), "RUNBOX_") {
				t.Errorf("the command sees %s", l)
			}
		}
	}
	t.Run("job", func(t *testing.T) {
		out, errs, code := jcli(t, env, "start", "--", "env")
		if code != 0 {
			t.Fatalf("start: %s", errs)
		}
		id := strings.TrimSpace(out)
		jcli(t, env, "wait", id)
		out, _, _ = jcli(t, env, "logs", id)
		check(t, out)
	})
	t.Run("run", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "run", "--", "env")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "GORACE=atexit_sleep_ms=0"}
		for k, v := range set {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("runbox run -- env: %v\n%s", err, stderr.String())
		}
		check(t, string(out))
	})
}

// /proc/PID/cmdline of a running `runbox run --env KEY=VALUE` (readable
// by every user of the machine) does not hold VALUE, while the command
// gets it; a bare --env KEY hands over runbox's own KEY, even a name the
// policy blocks. The control reads the same process's cmdline and finds
// the rest of the arguments, so the read does see runbox's argv.
func TestRun_EnvValueNotInCmdline(t *testing.T) {
	const secret = "s3cr3t-value-42"
	for _, tc := range []struct {
		name, key string
		args      []string
		env       []string
	}{
		{"separate", "APP_SETTING", []string{"--env", "APP_SETTING=" + secret}, nil},
		{"joined", "APP_SETTING", []string{"--env=APP_SETTING=" + secret}, nil},
		{"from the environment, blocked name", "MY_API_TOKEN", []string{"--env", "MY_API_TOKEN"}, []string{"MY_API_TOKEN=" + secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The command writes into its working directory, which a
			// sandbox (if any) leaves writable.
			dir := t.TempDir()
			marker := dir + "/seen"
			args := append([]string{"run"}, tc.args...)
			args = append(args, "--", fmt.Sprintf(`printf %%s "$%s" > seen.tmp && mv seen.tmp seen && exec sleep 600`, tc.key))
			cmd := exec.Command(os.Args[0], args...)
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(),
				"GORACE=atexit_sleep_ms=0", runMainEnv + "=1"}, tc.env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGINT)
				select {
				case <-done:
				case <-time.After(60 * time.Second):
					cmd.Process.Kill()
					<-done
				}
			})
			deadline := time.Now().Add(60 * time.Second)
			var seen []byte
			for {
				var err error
				if seen, err = os.ReadFile(marker); err == nil {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("runbox ended before its command ran: %v", err)
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the command did not run")
				}
			}
			if string(seen) != secret {
				t.Fatalf("the command got %s=%q; want the value", tc.key, seen)
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(cmdline), secret) {
				t.Errorf("runbox's cmdline holds the value: %q", cmdline)
			}
			if !strings.Contains(string(cmdline), "\x00run\x00") || !strings.Contains(string(cmdline), tc.key) {
				t.Errorf("runbox's cmdline %q: want its other arguments (control)", cmdline)
			}
		})
	}
}
