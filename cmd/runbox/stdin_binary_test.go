package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBinary runs this test binary as runbox, the way a user runs the
// real one, with stdin as its standard input (a pipe), and returns its
// stdout, stderr and exit status.
func runBinary(t *testing.T, stdin io.Reader, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "HOME="+home, "XDG_CONFIG_HOME="+home, "RUNBOX_CONFIG=", "RUNBOX_STATE_DIR="+filepath.Join(home, "state"))
	cmd.Dir = dir
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestRun_StdinAsTheCommandReadsIt: runbox run judges piped input the way
// the command reads it. A program that reads data (wc) gets it whatever
// it says, JSON a shell would not parse and "rm -rf /" alike; a shell
// gets commands, and input that ends is judged whole before the shell
// starts, so a refused second line runs nothing (the first line's canary
// is absent); an interpreter's program is judged as inline code, which
// the workspace sandbox lets run like a script and which asks (refused,
// with no one to ask) without it.
func TestRun_StdinAsTheCommandReadsIt(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "first-ran")
	tests := []struct {
		name    string
		stdin   string
		args    []string
		code    int
		out     string
		stderr  string
		started bool
	}{
		{"data to wc -c", `{"a": (1)}` + "\n", []string{"run", "--", "wc", "-c"}, 0, "11\n", "", true},
		{"hardline text to wc -l", "rm -rf /\n", []string{"run", "--", "wc", "-l"}, 0, "1\n", "", true},
		{"data to a pipeline", "b\na\n", []string{"run", "--", "sort | head -1"}, 0, "a\n", "", true},
		{"data to python3 -c", "x\n", []string{"run", "--sandbox", "workspace", "--", "python3 -c 'import sys; print(len(sys.stdin.read()))'"}, 0, "2\n", "", true},
		{"code to python3 under workspace", "print(6*7)\n", []string{"run", "--sandbox", "workspace", "--", "python3"}, 0, "42\n", "", true},
		{"code to python3 without a sandbox", "import shutil\nshutil.rmtree('x')\n", []string{"run", "--sandbox", "off", "--", "python3"}, 125, "", "inline-code", false},
		{"quiet code to python3 without a sandbox", "print(6*7)\n", []string{"run", "--sandbox", "off", "--", "python3"}, 0, "42\n", "", true},
		{"commands to bash", "touch " + canary + "\necho ok\n", []string{"run", "--sandbox", "off", "--", "bash"}, 0, "ok\n", "", true},
		{"refused second line", "touch " + canary + "\nrm -rf /\n", []string{"run", "--sandbox", "off", "--", "bash"}, 125, "", "line 2 of stdin refused", false},
		{"multi-line statement", "if true; then\n  echo multi\nfi\n", []string{"run", "--sandbox", "off", "--", "bash"}, 0, "multi\n", "", true},
		{"data not parsed as commands", `{"a": (1)}` + "\n", []string{"run", "--sandbox", "off", "--", "bash"}, 125, "", "could not be parsed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(canary)
			out, stderr, code := runBinary(t, strings.NewReader(tt.stdin), dir, tt.args...)
			if code != tt.code || out != tt.out || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, out %q, stderr %q; want %d, %q, %q", code, out, stderr, tt.code, tt.out, tt.stderr)
			}
			if !tt.started && strings.Contains(stderr, "killed") {
				t.Errorf("the command started on input that was refused: %q", stderr)
			}
			if _, err := os.Stat(canary); err == nil && tt.code != 0 {
				t.Errorf("the line before the refused one ran")
			}
		})
	}
}

// TestRun_StdinStream: input that pauses before its end is a stream:
// what passed reaches the shell as it is judged, and the shell is killed
// at the refused line, before the line after it.
func TestRun_StdinStream(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "first-line-ran")
	pr, pw := io.Pipe()
	go func() {
		// The rest is written once the first line has run: the input is
		// a stream by construction, however slow the machine.
		io.WriteString(pw, "echo streamed; : > "+marker+"\n")
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
		}
		io.WriteString(pw, "rm -rf /\necho never\n")
		pw.Close()
	}()
	out, stderr, code := runBinary(t, pr, dir, "run", "--sandbox", "off", "--", "bash")
	if code != 125 || out != "streamed\n" || !strings.Contains(stderr, "line 2 of stdin refused") || !strings.Contains(stderr, "killed") {
		t.Fatalf("exit %d, out %q, stderr %q; want 125, the first line run and the kill at line 2", code, out, stderr)
	}
}

// TestCheck_PredictsRun: runbox check gives the verdict runbox run acts
// on, for the same arguments and configuration: several arguments are an
// argv (quoted), the default sandbox is judged under, inline code runs
// under it, a write it refuses is denied, bash's /dev/tcp is named a
// network connection; and --yolo lets a command too large to analyse
// run, as run does.
func TestCheck_PredictsRun(t *testing.T) {
	dir := t.TempDir()
	if out, _, _ := runBinary(t, nil, dir, "check", "--", "true"); !strings.Contains(out, "sandbox:  workspace") {
		t.Skipf("no workspace sandbox here: %q", out)
	}
	big := make([]string, 20000)
	for i := range big {
		big[i] = "word"
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"argv quoted", []string{"check", "--", "ls", "my dir"}, checkAllow, "command:  ls 'my dir'"},
		{"inline code under the sandbox", []string{"check", "--", "python3", "-c", "import shutil"}, checkAllow, "inline code allowed"},
		{"inline code without it", []string{"--sandbox", "off", "check", "--", "python3", "-c", "import shutil"}, checkAsk, "inline-code"},
		{"write outside the workspace", []string{"check", "--", "echo x > /var/tmp/runbox-check-y"}, checkDeny, "writes outside the workspace"},
		{"dev tcp", []string{"check", "--", "echo x > /dev/tcp/192.0.2.1/80"}, checkDeny, "network connection"},
		{"too complex", append([]string{"check", "--", "echo"}, big...), checkAsk, "too-complex"},
		{"too complex, yolo", append([]string{"--yolo", "check", "--", "echo"}, big...), checkAllow, "too-complex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runBinary(t, nil, dir, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, out %q, stderr %q; want %d and %q", code, out, stderr, tt.code, tt.want)
			}
			// What run does with the same arguments agrees.
			run := append([]string{}, tt.args...)
			for i, a := range run {
				if a == "check" {
					run[i] = "run"
				}
			}
			_, rstderr, rcode := runBinary(t, nil, dir, run...)
			if refused := rcode == 125 && strings.Contains(rstderr, "refused by the command gate"); refused != (tt.code != checkAllow) {
				t.Errorf("run: exit %d, stderr %q; check said %d", rcode, tail(rstderr, 300), code)
			}
		})
	}
}

// TestRun_WriteRefusalSaysHowToAllow: a write the sandbox refused is
// followed by how to allow it, on stderr and in the --json result.
func TestRun_WriteRefusalSaysHowToAllow(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runBinary(t, nil, dir, "run", "--sandbox", "workspace", "--", "touch /etc/runbox-test-x")
	if code == 125 && strings.Contains(stderr, "sandbox") && !strings.Contains(stderr, "denied") {
		t.Skipf("no workspace sandbox here: %q", stderr)
	}
	if !strings.Contains(stderr, "sandbox denied write /etc/runbox-test-x") || !strings.Contains(stderr, "sandbox.writable") || !strings.Contains(stderr, "--sandbox off") {
		t.Fatalf("exit %d, stderr %q; want the refusal and how to allow it", code, stderr)
	}
	out, _, _ := runBinary(t, nil, dir, "run", "--json", "--sandbox", "workspace", "--", "touch /etc/runbox-test-x")
	var res struct {
		Hint string `json:"sandbox_hint"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !strings.Contains(res.Hint, "sandbox.writable") {
		t.Fatalf("--json result %q (%v); want a sandbox_hint naming sandbox.writable", out, err)
	}
}
