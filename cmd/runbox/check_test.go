package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/approval"
)

// TestCheck_JSONLGolden protects the --jsonl contract (DESIGN.md): one
// object per input line with command, decision, hardline and reasons
// ([] when empty). Regenerate with go test -run TestCheck_JSONLGolden -update.
func TestCheck_JSONLGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/check-jsonl.input")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, string(in), nil, "check", "--jsonl")
	if code != 0 {
		t.Fatalf("check --jsonl exit %d, stderr %q", code, errOut)
	}
	golden(t, "check-jsonl.golden", out)
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, l)
		}
		if _, ok := obj["reasons"].([]any); !ok {
			t.Errorf("line %d: reasons = %v; want a list, never null", i+1, obj["reasons"])
		}
	}
}

// TestCheck_JSONLIgnoresConfig: --jsonl uses the default policy even when
// the configuration would allow everything.
func TestCheck_JSONLIgnoresConfig(t *testing.T) {
	cfg := t.TempDir() + "/config.yaml"
	os.WriteFile(cfg, []byte("approval:\n  mode: off\n  allow:\n    - git-push-force\n"), 0o600)
	out, errOut, code := cli(t, `"git push --force"`+"\n", map[string]string{"RUNBOX_CONFIG": cfg}, "check", "--jsonl")
	if code != 0 || !strings.Contains(out, `"decision":"ask"`) {
		t.Errorf("check --jsonl with a permissive config = %q (exit %d, stderr %q); want ask", out, code, errOut)
	}
}

// TestCheck_JSONLProtectsRunboxFiles: a batch judges a write to runbox's
// own configuration as the one-command form does (hardline), with HOME
// and XDG_CONFIG_HOME from the environment.
func TestCheck_JSONLProtectsRunboxFiles(t *testing.T) {
	env := map[string]string{"HOME": "/home/agent", "XDG_CONFIG_HOME": "/home/agent/.cfg"}
	in := `"echo 'mode: off' > ~/.cfg/runbox/config.yaml"` + "\n" + `"echo hi > notes.txt"` + "\n"
	out, errOut, code := cli(t, in, env, "check", "--jsonl")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("check --jsonl = %q (exit %d, stderr %q)", out, code, errOut)
	}
	if !strings.Contains(lines[0], `"decision":"deny","hardline":true`) {
		t.Errorf("a write to runbox's configuration: %s; want a hardline deny", lines[0])
	}
	if !strings.Contains(lines[1], `"decision":"allow"`) {
		t.Errorf("an ordinary write: %s; want allow", lines[1])
	}
	_, _, one := cli(t, "", env, "check", "echo 'mode: off' > ~/.cfg/runbox/config.yaml")
	if one != 3 {
		t.Errorf("the one-command form exits %d; want 3 (deny)", one)
	}
}

// TestCheck_JSONLBadLine: a line that is not a JSON string is a usage
// error that names the line, after earlier lines were answered.
func TestCheck_JSONLBadLine(t *testing.T) {
	out, errOut, code := cli(t, "\"ls\"\nls -la\n", nil, "check", "--jsonl")
	if code != exitUsage || !strings.Contains(errOut, "line 2") || strings.Count(out, "\n") != 1 {
		t.Errorf("check --jsonl on a bad line = %q, %q, exit %d; want one answer, a line-2 error and exit %d", out, errOut, code, exitUsage)
	}
}

// TestCheck_JSONLBatchInOrder: lines that arrive together are answered
// by several workers, and the answers come out in the input's order,
// each as it comes when the same lines are sent one at a time; a bad
// line after a large batch still ends the run with that batch
// answered.
func TestCheck_JSONLBatchInOrder(t *testing.T) {
	commands := append(approval.SampleCommands(), approval.RuleExamples()...)
	var in strings.Builder
	for _, c := range commands {
		b, _ := json.Marshal(c)
		in.Write(b)
		in.WriteByte('\n')
	}
	out, errOut, code := cli(t, in.String(), nil, "check", "--jsonl")
	if code != 0 {
		t.Fatalf("check --jsonl exit %d, stderr %q", code, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(commands) {
		t.Fatalf("%d answers to %d lines", len(got), len(commands))
	}
	for i := 0; i < len(commands); i += 37 { // a sample, one run each
		b, _ := json.Marshal(commands[i])
		one, _, _ := cli(t, string(b)+"\n", nil, "check", "--jsonl")
		if strings.TrimSuffix(one, "\n") != got[i] {
			t.Errorf("line %d: in a batch %s; alone %s", i+1, got[i], one)
		}
	}
	out, errOut, code = cli(t, in.String()+"not json\n", nil, "check", "--jsonl")
	if code != exitUsage || strings.Count(out, "\n") != len(commands) || !strings.Contains(errOut, fmt.Sprintf("line %d", len(commands)+1)) {
		t.Errorf("a bad line after %d good ones: %d answers, stderr %q, exit %d", len(commands), strings.Count(out, "\n"), errOut, code)
	}
}

// TestCheck_HumanExitStatus: without --jsonl the exit status tells allow,
// ask and deny apart, and the output names the decision and reasons.
func TestCheck_HumanExitStatus(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "ls", "-la"}, checkAllow, "decision: allow"},
		{[]string{"check", "git", "push", "--force"}, checkAsk, "git force push"},
		{[]string{"check", "--", "rm", "-rf", "/"}, checkDeny, "hardline: true"},
		{[]string{"check", "rm -rf /"}, checkDeny, "recursive delete of the root"},
	}
	for _, tt := range tests {
		out, errOut, code := cli(t, "", nil, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("runbox %q = exit %d, %q (stderr %q); want exit %d and %q", tt.args, code, out, errOut, tt.code, tt.want)
		}
	}
	if _, _, code := cli(t, "", nil, "check"); code != exitUsage {
		t.Errorf("runbox check with no command: exit %d; want %d", code, exitUsage)
	}
	if _, _, code := cli(t, "", nil, "check", "--jsonl", "ls"); code != exitUsage {
		t.Errorf("runbox check --jsonl ls: exit %d; want %d", code, exitUsage)
	}
}

// TestCheck_JSONLAnswersBeforeReadingOn: a caller that writes one command
// and waits for its verdict before writing the next gets each verdict
// while check --jsonl waits for more input (the output is buffered only
// while input is already there to read).
func TestCheck_JSONLAnswersBeforeReadingOn(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := newApp(inR, outW, io.Discard, func(string) string { return "" })
	done := make(chan error, 1)
	go func() {
		done <- a.execute(context.Background(), []string{"check", "--jsonl"})
		outW.Close()
	}()
	answers := bufio.NewReader(outR)
	for _, c := range []string{"ls -la", "rm -rf /", "git push --force"} {
		if _, err := fmt.Fprintf(inW, "%q\n", c); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { l, _ := answers.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			if !strings.Contains(l, fmt.Sprintf(`"command":%q`, c)) {
				t.Fatalf("answer to %q = %q", c, l)
			}
		case <-time.After(30 * time.Second): // a hang, not a speed bound
			inW.Close()
			t.Fatalf("no answer to %q while check --jsonl waits for input", c)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCheck_SandboxProfiles: --sandbox judges a command as it would run
// under that profile in the --workspace root: a delete inside the
// workspace is allowed under workspace (it asks without --sandbox, and
// under off, unless it removes only build artefacts), one outside is denied with the sandbox named, and hardline
// stays hardline.
func TestCheck_SandboxProfiles(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"HOME": "/home/agent"}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"control: no sandbox", []string{"--sandbox", "off", "check", "rm", "-rf", "src", "docs"}, checkAsk, []string{"decision: ask"}},
		{"off", []string{"check", "--sandbox", "off", "--workspace", root, "rm", "-rf", "src", "docs"}, checkAsk,
			[]string{"decision: ask", "sandbox:  off"}},
		{"workspace relaxes", []string{"check", "--sandbox", "workspace", "--workspace", root, "rm", "-rf", "src", "docs"}, checkAllow,
			[]string{"decision: allow", "sandbox workspace: allowed without asking", "sandbox:  workspace (workspace " + root + ")"}},
		{"build artefacts in every profile", []string{"check", "--sandbox", "off", "--workspace", root, "rm", "-rf", "node_modules", "build"}, checkAllow,
			[]string{"decision: allow", "sandbox:  off"}},
		{"workspace denies outside", []string{"check", "--sandbox", "workspace", "--workspace", root, "--", "rm", "-rf", "~/x"}, checkDeny,
			[]string{"decision: deny", "sandbox workspace: writes outside the workspace are blocked by the kernel (rm ~/x)"}},
		{"workspace denies secrets", []string{"check", "--sandbox", "workspace", "--workspace", root, "cat ~/.ssh/id_rsa"}, checkDeny,
			[]string{"reading ~/.ssh/id_rsa is blocked by the kernel"}},
		{"read-only denies inside", []string{"check", "--sandbox", "read-only", "--workspace", root, "rm", "-rf", "build"}, checkDeny,
			[]string{"sandbox read-only: writes are blocked by the kernel (rm build)"}},
		{"hardline", []string{"check", "--sandbox", "workspace", "--workspace", root, "--", "rm", "-rf", "/"}, checkDeny,
			[]string{"hardline: true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, "", env, tt.args...)
			if code != tt.code {
				t.Errorf("runbox %q = exit %d, %q (stderr %q); want exit %d", tt.args, code, out, errOut, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("runbox %q output %q; want %q in it", tt.args, out, w)
				}
			}
		})
	}
}

// TestCheck_JSONLSandbox: --jsonl --sandbox answers each line under the
// profile and names it in a "sandbox" field; without --sandbox the field
// is absent (the golden test holds the rest of that output).
func TestCheck_JSONLSandbox(t *testing.T) {
	root := t.TempDir()
	in := `"rm -rf node_modules build"` + "\n" + `"rm -rf ~/x"` + "\n" + `"rm -rf /"` + "\n"
	env := map[string]string{"HOME": "/home/agent"}
	out, errOut, code := cli(t, in, env, "check", "--jsonl", "--sandbox", "workspace", "--workspace", root)
	if code != 0 {
		t.Fatalf("check --jsonl --sandbox workspace: exit %d, stderr %q", code, errOut)
	}
	var got []checkLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var c checkLine
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, c)
	}
	want := []struct {
		decision string
		hardline bool
	}{{"allow", false}, {"deny", false}, {"deny", true}}
	if len(got) != len(want) {
		t.Fatalf("check --jsonl --sandbox workspace = %q; want %d lines", out, len(want))
	}
	for i, w := range want {
		if got[i].Decision.String() != w.decision || got[i].Hardline != w.hardline || got[i].Sandbox != "workspace" {
			t.Errorf("line %d = %+v; want %s hardline=%v sandbox workspace", i+1, got[i], w.decision, w.hardline)
		}
	}
	plain, _, _ := cli(t, in, env, "check", "--jsonl")
	if strings.Contains(plain, `"sandbox"`) || !strings.Contains(plain, `"decision":"ask"`) {
		t.Errorf("check --jsonl without --sandbox = %q; want no sandbox field and the delete asking", plain)
	}
}

// TestCheck_SandboxUsage: a profile outside the closed set, or
// --workspace alone, is a usage error.
func TestCheck_SandboxUsage(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--sandbox", "strict", "ls"},
		{"check", "--workspace", "/tmp", "ls"},
		{"check", "--jsonl", "--sandbox", "nope"},
	} {
		if _, errOut, code := cli(t, "", nil, args...); code != exitUsage {
			t.Errorf("runbox %q: exit %d (stderr %q); want %d", args, code, errOut, exitUsage)
		}
	}
}

// TestCheck_SandboxGitRoot: the workspace --sandbox describes is the git
// root above --workspace, as the sandbox applies it: a delete in a
// sibling directory of the same repository is inside it, one beside the
// repository is not.
func TestCheck_SandboxGitRoot(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(repo+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(repo+"/web", 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": "/home/agent"}
	base := []string{"check", "--sandbox", "workspace", "--workspace", repo + "/web", "--"}
	out, errOut, code := cli(t, "", env, append(base, "rm", "-rf", "../api/build")...)
	if code != checkAllow || !strings.Contains(out, "sandbox:  workspace (workspace "+repo+")") {
		t.Errorf("a delete in the repository = exit %d, %q (stderr %q); want allow under workspace %s", code, out, errOut, repo)
	}
	out, errOut, code = cli(t, "", env, append(base, "rm", "-rf", "../../elsewhere")...)
	if code != checkDeny || !strings.Contains(out, "sandbox workspace: writes outside the workspace") {
		t.Errorf("a delete beside the repository = exit %d, %q (stderr %q); want a sandbox denial", code, out, errOut)
	}
}
