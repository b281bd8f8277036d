//go:build linux

package confine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
)

// A user the attacks run as: root, or nobody (started by root with
// SysProcAttr.Credential).
type user struct {
	name string
	cred *syscall.Credential
}

var users = []user{
	{name: "root"},
	{name: "nobody", cred: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}},
}

// forUsers runs f once per user (root only when the test runs as root,
// which it must to switch users).
func forUsers(t *testing.T, f func(t *testing.T, u user)) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root to run commands as root and as nobody")
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) { f(t, u) })
	}
}

// fixture is a temporary HOME full of canaries, a workspace inside it, a
// victim file outside it, a private TMPDIR, and a copy of the test binary
// that the user can execute (the go test build directory is root's only).
type fixture struct {
	u                   user
	base, home, ws, tmp string
	outside, victim     string
	secret              string // path of the ssh key canary
	exe                 string
	// thread: programs start from a thread confined by a
	// confine.Prepared instead of through the trampoline.
	thread bool
	// report, when set, is told of the connects the sandbox refuses
	// (programs started by this process: not as nobody from a thread).
	report func(confine.Violation)
}

const (
	victimText = "VICTIM-ORIGINAL\n"
	secretText = "SECRET-KEY-CANARY"
)

func newFixture(t testing.TB, u user) *fixture {
	t.Helper()
	base, err := os.MkdirTemp("", "confine-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	base, _ = filepath.EvalSymlinks(base)
	f := &fixture{u: u, base: base, home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside")}
	f.ws = filepath.Join(f.home, "project")
	f.tmp = filepath.Join(base, "tmp")
	f.victim = filepath.Join(f.outside, "victim.txt")
	f.secret = filepath.Join(f.home, ".ssh", "id_ed25519")
	files := map[string]string{
		f.victim: victimText,
		f.secret: secretText,
		filepath.Join(f.home, ".aws", "credentials"):    "AWS-CANARY",
		filepath.Join(f.home, ".bash_history"):          "HISTORY-CANARY",
		filepath.Join(f.home, ".netrc"):                 "NETRC-CANARY",
		filepath.Join(f.home, ".npmrc"):                 "//registry.example/:_authToken=NPM-TOKEN-CANARY",
		filepath.Join(f.home, ".cache", "CACHEDIR.TAG"): "Signature: 8a477f597d28d172789f06886806bc55\n",
		filepath.Join(f.home, ".bashrc"):                "# rc\n",
		filepath.Join(f.ws, "README"):                   "project\n",
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(f.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	f.exe = filepath.Join(base, "bin", "trampoline")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testproc.CopyFile(t, exe, f.exe)
	if u.cred != nil {
		for _, d := range []string{f.home, f.outside, f.tmp} {
			chownTree(t, d, int(u.cred.Uid), int(u.cred.Gid))
		}
	}
	return f
}

func chownTree(t testing.TB, root string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// policy is the documented policy of profile for the fixture, with its
// TMPDIR writable.
func (f *fixture) policy(profile string) confine.Policy {
	p := confine.DefaultPolicy(profile, f.ws, f.home)
	if profile != confine.ProfileOff {
		p.Writable = append(p.Writable, f.tmp)
	}
	// The workspace's own caches, made as runbox makes them before a
	// command, and the user's as they would be.
	if _, err := confine.MakeCaches(p, f.home, exec.LookPath); err == nil && f.u.cred != nil {
		filepath.Walk(filepath.Join(f.home, ".cache"), func(q string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(q, int(f.u.cred.Uid), int(f.u.cred.Gid))
			}
			return nil
		})
	}
	return p
}

// run runs script with bash under p, as the fixture's user, in the
// workspace, and returns its combined output and exit code.
func (f *fixture) run(t testing.TB, p confine.Policy, script string, env ...string) (string, int) {
	t.Helper()
	return f.runArgv(t, p, "/bin/bash", []string{"bash", "-c", script}, env...)
}

func (f *fixture) runArgv(t testing.TB, p confine.Policy, path string, args []string, env ...string) (string, int) {
	t.Helper()
	// The bound only catches a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	switch {
	case f.thread && f.u.cred == nil:
		cmd = exec.CommandContext(ctx, path)
		cmd.Args = args
	case f.thread:
		// A confined thread cannot switch users for its child (its
		// capabilities are gone): a helper running as the user
		// confines its own thread.
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.CommandContext(ctx, f.exe, append([]string{string(enc), path}, args...)...)
		cmd.Args[0] = helperThread
	default:
		argv, err := confine.Argv([]string{f.exe, confine.Command}, p, path, args)
		if err != nil {
			t.Fatalf("Argv: %v", err)
		}
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		if p.Profile == confine.ProfileOff {
			cmd.Args = args // Argv has nothing to wrap: keep argv[0]
		}
	}
	cmd.Dir = f.ws
	cmd.Env = append([]string{"HOME=" + f.home, "TMPDIR=" + f.tmp, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.u.cred, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	switch {
	case f.thread && f.u.cred == nil && p.Profile != confine.ProfileOff:
		// The confined thread ends as soon as the child started: a
		// parent-death signal would kill the child at once.
		cmd.SysProcAttr.Pdeathsig = 0
		err = startPrepared(t, p, cmd, f.report)
	case f.thread:
		err = cmd.Start()
	default:
		err = startHandedOver(p, cmd, f.report)
	}
	if err != nil {
		t.Fatalf("starting %q: %v", args, err)
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %q: %v", args, err)
	}
	return out.String(), code
}

// startHandedOver starts cmd, a program wrapped in the trampoline, and
// serves its seccomp listener in this process, as runbox does.
func startHandedOver(p confine.Policy, cmd *exec.Cmd, report func(confine.Violation)) error {
	h, err := confine.NewHandover(p)
	if err != nil {
		return err
	}
	if h == nil {
		return cmd.Start()
	}
	h.Name(cmd)
	if err := cmd.Start(); err != nil {
		h.Close()
		return err
	}
	h.Serve(cmd.Process.Pid, report)
	return nil
}

// startPrepared starts cmd from a thread confined by p.
func startPrepared(t testing.TB, p confine.Policy, cmd *exec.Cmd, report func(confine.Violation)) error {
	t.Helper()
	pp, err := confine.Prepare(p)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer pp.Close()
	gone, _, err := pp.Start(cmd.Start, report)
	if gerr := gone(); err == nil {
		err = gerr
	}
	return err
}

// threadHelper runs as the helper of runArgv: its arguments are the
// policy as JSON, the program and its argv; it starts the program from a
// thread confined by the policy (unconfined under off), waits for it and
// exits with its status.
func threadHelper(args []string) int {
	var p confine.Policy
	if len(args) < 3 || json.Unmarshal([]byte(args[0]), &p) != nil {
		fmt.Fprintln(os.Stderr, "thread helper: bad arguments")
		return 2
	}
	cmd := &exec.Cmd{Path: args[1], Args: args[2:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	var err error
	if p.Profile == confine.ProfileOff {
		err = cmd.Start()
	} else {
		var pp *confine.Prepared
		if pp, err = confine.Prepare(p); err == nil {
			defer pp.Close()
			var gone func() error
			gone, _, err = pp.Start(cmd.Start, nil)
			if gerr := gone(); err == nil {
				err = gerr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "thread helper:", err)
		return 126
	}
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 125
	}
	return 0
}

func (f *fixture) victimChanged() bool {
	b, err := os.ReadFile(f.victim)
	return err != nil || string(b) != victimText
}

// collect sets f's report and returns what it was told so far.
func collect(f *fixture) func() []confine.Violation {
	var mu sync.Mutex
	var got []confine.Violation
	f.report = func(v confine.Violation) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, v)
	}
	return func() []confine.Violation {
		mu.Lock()
		defer mu.Unlock()
		return append([]confine.Violation(nil), got...)
	}
}

// reports reports whether f's runs report violations: a helper's thread
// started for another user has no listener of runbox's to report from.
func (f *fixture) reports() bool { return f.u.cred == nil || !f.thread }

func hasViolation(vs []confine.Violation, op, target string) bool {
	for _, v := range vs {
		if v.Op == op && (v.Target == target || strings.HasPrefix(v.Target, target)) {
			return true
		}
	}
	return false
}
