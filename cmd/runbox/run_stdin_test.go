package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/ssh/sshtest"
)

// TestRun_StdinIsGated: what runbox run pipes into a command's stdin is
// judged line by line, like a session's stdin: a shell fed
// "cat script.sh | bash" on its stdin does not run the script; the
// command is killed at the refused line (nothing after it runs), and runbox says which line and why. The control case
// feeds lines the gate allows, one of which runs the same script: the
// canary appears, so the refused case's missing canary is the gate's
// doing. (Before stdin was gated, the first case ran the script.)
func TestRun_StdinIsGated(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "ran")
	os.WriteFile(filepath.Join(dir, "script.sh"), []byte("touch "+canary+"\n"), 0o644)
	cases := []struct {
		name, stdin string
		code        int
		out         string
		ran         bool
	}{
		{"refused line", "echo first\ncat script.sh | bash\necho after\n", 125, "", false},
		{"refused last line without newline", "echo first\ncat script.sh | bash", 125, "", false},
		{"allowed lines", "echo first\nbash script.sh\necho after\n", 0, "first\nafter\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(canary)
			out, stderr, code := cli(t, tc.stdin, nil, "run", "--cwd", dir, "--", "bash")
			// Lines are judged as they stream in, ahead of the shell, so
			// whether "first" ran before the kill is a race; nothing
			// after the refused line may run.
			if tc.code != 0 {
				out = strings.TrimPrefix(out, "first\n")
			}
			if code != tc.code || out != tc.out {
				t.Fatalf("exit %d, out %q (stderr %q); want %d, %q", code, out, stderr, tc.code, tc.out)
			}
			_, err := os.Stat(canary)
			if ran := err == nil; ran != tc.ran {
				t.Fatalf("script ran = %v; want %v (stderr %q)", ran, tc.ran, stderr)
			}
			if tc.code == 125 && (!strings.Contains(stderr, "line 2 of stdin refused") || !strings.Contains(stderr, "piped into a shell")) {
				t.Errorf("stderr %q does not name the refused line and the rule", stderr)
			}
		})
	}
}

// TestRun_StdinRefusedJSON: with --json a refused stdin line is one
// error object naming the gate's decision.
func TestRun_StdinRefusedJSON(t *testing.T) {
	out, stderr, code := cli(t, "cat /dev/null | bash\n", nil, "run", "--json", "--cwd", t.TempDir(), "--", "bash")
	var got struct {
		ExitCode int    `json:"exit_code"`
		Kind     string `json:"kind"`
		Decision string `json:"decision"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 125 || got.Kind != "denied" || got.Decision != "deny" {
		t.Fatalf("exit %d, out %q (%v), stderr %q; want one denied object", code, out, err, stderr)
	}
}

// TestRun_JSONOnEveryFailure: with --json, failures before the command
// runs (a bad flag value, a broken configuration) print one JSON object
// on stdout too.
func TestRun_JSONOnEveryFailure(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(bad, []byte("backend: [\n"), 0o600)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"bad duration", []string{"run", "--json", "--timeout", "abc", "--", "true"}, 2},
		{"unknown flag", []string{"run", "--json", "--bogus", "--", "true"}, 2},
		{"broken config", []string{"--config", bad, "run", "--json", "--", "true"}, 125},
		{"empty command", []string{"run", "--json", "--", " "}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := cli(t, "", nil, tc.args...)
			var got struct {
				ExitCode int    `json:"exit_code"`
				Error    string `json:"error"`
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &got) != nil || got.ExitCode != tc.code || got.Error == "" || code != tc.code {
				t.Fatalf("exit %d, stdout %q, stderr %q; want one object with exit_code %d", code, out, stderr, tc.code)
			}
		})
	}
}

// TestSyncLocal_RunDiffApply: runbox run --sync and runbox sync work on
// the local backend: the task's workspace is a directory of its own, and
// diff and apply find it again without being told the backend.
func TestSyncLocal_RunDiffApply(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"RUNBOX_STATE_DIR": filepath.Join(t.TempDir(), "state")}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	out, stderr, code := cli(t, "", env, "run", "--backend", "local", "--task", "t1", "--sync", dir, "--",
		"cat a.txt && echo ALPHA > a.txt && echo new > c.txt")
	if code != 0 || out != "alpha\n" {
		t.Fatalf("run --sync: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("the command wrote the local directory itself: a.txt = %q", b)
	}
	out, stderr, code = cli(t, "", env, "sync", "diff", "--task", "t1")
	if code != 0 || !strings.Contains(out, "-alpha\n+ALPHA\n") || !strings.Contains(out, "+++ b/c.txt\n") {
		t.Fatalf("sync diff: exit %d\n%s\nstderr %s", code, out, stderr)
	}
	out, stderr, code = cli(t, "", env, "sync", "apply", "--task", "t1")
	if code != 0 || out != "wrote a.txt\nwrote c.txt\n" {
		t.Fatalf("sync apply: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c.txt")); string(b) != "new\n" {
		t.Errorf("c.txt = %q; want new", b)
	}
	// A second run pushes only the change, into the same directory.
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	out, stderr, code = cli(t, "", env, "run", "--backend", "local", "--task", "t1", "--sync", dir, "--", "cat a.txt b.txt c.txt")
	if code != 0 || out != "ALPHA\nbeta\nnew\n" {
		t.Fatalf("second run: exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// TestSyncSSH_RunDiffApply: runbox run --sync and runbox sync work over
// ssh against a real sshd: the task's workspace is the --sync-to
// directory on the host, and diff and apply reopen the same host from
// what the push recorded.
func TestSyncSSH_RunDiffApply(t *testing.T) {
	d := sshtest.Start(t)
	tmp := t.TempDir()
	agentBin := filepath.Join(tmp, "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(tmp, "config.yaml")
	os.WriteFile(cfg, []byte("ssh:\n  agent_binary: "+agentBin+"\n"), 0o600)
	env := map[string]string{
		"HOME": filepath.Join(tmp, "home"), "SSH_AUTH_SOCK": "", "RUNBOX_CONFIG": cfg,
		"RUNBOX_STATE_DIR": filepath.Join(tmp, "state"),
	}
	dir, remote := t.TempDir(), filepath.Join(tmp, "remote", "ws")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	out, stderr, code := cli(t, "", env, "run", "--backend", "ssh", "--host", d.Target(), "--identity", d.UserKey,
		"--accept-new-host-key", "--task", "s1", "--sync", dir, "--sync-to", remote, "--",
		"pwd && cat a.txt && echo ALPHA > a.txt")
	if code != 0 || out != remote+"\nalpha\n" {
		t.Fatalf("run --sync over ssh: exit %d, out %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = cli(t, "", env, "sync", "diff", "--task", "s1")
	if code != 0 || !strings.Contains(out, "-alpha\n+ALPHA\n") {
		t.Fatalf("sync diff: exit %d\n%s\nstderr %s", code, out, stderr)
	}
	out, stderr, code = cli(t, "", env, "sync", "apply", "--task", "s1")
	if code != 0 || out != "wrote a.txt\n" {
		t.Fatalf("sync apply: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "ALPHA\n" {
		t.Errorf("a.txt = %q; want ALPHA", b)
	}
}

// TestRun_InteractiveWithoutPTYIsTold: an interactive program run on a
// terminal without --pty reads end-of-input at once (runbox does not
// hand a terminal's input to a command): runbox says so and names --pty.
// A program that does not read its input gets no such note.
func TestRun_InteractiveWithoutPTYIsTold(t *testing.T) {
	cases := []struct {
		args []string
		told bool
	}{
		{[]string{"run", "--sandbox", "off", "--", "bash"}, true},
		{[]string{"run", "--sandbox", "off", "--", "echo", "plain"}, false},
	}
	for _, tc := range cases {
		tt := newTestTerminal(t, false)
		cmd := tt.startRunbox(t, tc.args...)
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("%v: exit %d; terminal: %q", tc.args, code, tt.output())
		}
		tt.slave.Close() // nothing else writes: the reader drains and ends
		<-tt.done
		out := tt.output()
		if told := strings.Contains(out, "--pty"); told != tc.told {
			t.Errorf("%v: told about --pty = %v; want %v (terminal %q)", tc.args, told, tc.told, out)
		}
	}
}
