package local_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/local"
)

func TestMain(m *testing.M) {
	// The test binary plays runbox's subreaper for the Subreaper runs.
	if len(os.Args) > 1 && os.Args[1] == subreaper.Command {
		os.Exit(subreaper.Main(os.Args[2:]))
	}
	// And the sandbox's trampoline for the confined runs.
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		os.Exit(confine.Main(os.Args[2:]))
	}
	// Installed as runbox-confine on PATH, as the install command puts
	// it, so that environments nobody gave a Confiner find it.
	testproc.TrampolineMain(m)
}

// subreaperArgv runs this test binary as the subreaper.
func subreaperArgv(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, subreaper.Command}
}

func open(t *testing.T, opts local.Options) *local.Env {
	t.Helper()
	if opts.Grace == 0 {
		opts.Grace = 300 * time.Millisecond
	}
	if opts.Confine == nil {
		// The contract's tests run unconfined, chosen; the default
		// (confined) has its own tests in confine_test.go.
		opts.Confine = confine.Off()
	}
	env, err := local.New(opts)
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

// TestConformance runs the contract suite against the local backend, with
// and without containment.
func TestConformance(t *testing.T) {
	for name, opts := range map[string]local.Options{"Contained": {}, "ProcessGroups": {NoContainment: true}, "Subreaper": {NoContainment: true}} {
		t.Run(name, func(t *testing.T) {
			envtest.Run(t, func(t *testing.T) envs.Environment {
				if name == "Subreaper" {
					opts.Subreaper = subreaperArgv(t)
				}
				return open(t, opts)
			})
		})
	}
}

func TestConformance_Sh(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		integration.Skip(t, "no /bin/sh: %v", err)
	}
	envtest.Run(t, func(t *testing.T) envs.Environment {
		return open(t, local.Options{Confine: confine.Off(), Shell: "/bin/sh"})
	})
}

func run(t *testing.T, env *local.Env, c envs.Command) *envs.Result {
	t.Helper()
	res, err := env.Run(t.Context(), c)
	if err != nil {
		t.Fatalf("Run(%q): %v", c.Shell, err)
	}
	return res
}

// TestEnv_SecretsNeverReachChildren: provider keys and sandbox tokens in
// the caller's environment are not in a child's environment.
func TestEnv_SecretsNeverReachChildren(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOME=/root", "OPENAI_API_KEY=sk-leak-1", "MODAL_TOKEN_SECRET=leak-2", "ANTHROPIC_API_KEY=leak-3", "KEEP_ME=yes"}
	env := open(t, local.Options{Confine: confine.Off(), BaseEnv: base})
	res := run(t, env, envs.Command{Shell: "env; cat /proc/$$/environ | tr '\\0' '\\n'"})
	for _, secret := range []string{"sk-leak-1", "leak-2", "leak-3", "OPENAI_API_KEY", "MODAL_TOKEN_SECRET"} {
		if strings.Contains(res.Output, secret) {
			t.Errorf("child environment contains %q", secret)
		}
	}
	if !strings.Contains(res.Output, "KEEP_ME=yes") {
		t.Errorf("harmless variable lost: %q", res.Output)
	}
}

// TestEnv_DeletedCwdFallsBack: a session directory removed under the
// session falls back to the nearest ancestor, with a warning.
func TestEnv_DeletedCwdFallsBack(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	os.MkdirAll(sub, 0o755)
	env := open(t, local.Options{Confine: confine.Off(), Dir: sub})
	os.RemoveAll(filepath.Join(dir, "a"))
	res := run(t, env, envs.Command{Shell: "pwd"})
	if res.Code != 0 || strings.TrimSpace(res.Output) != dir {
		t.Fatalf("Run in deleted cwd: code %d output %q; want 0 and %s", res.Code, res.Output, dir)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "no longer exists") {
		t.Errorf("no warning about the deleted directory: %q", res.Warnings)
	}
}

// TestEnv_DirOverride: a per-call Dir applies to that call only.
func TestEnv_DirOverride(t *testing.T) {
	dir := t.TempDir()
	env := open(t, local.Options{Confine: confine.Off(), Dir: "/"})
	if res := run(t, env, envs.Command{Shell: "pwd", Dir: dir}); strings.TrimSpace(res.Output) != dir {
		t.Fatalf("override: %q", res.Output)
	}
	if res := run(t, env, envs.Command{Shell: "pwd"}); strings.TrimSpace(res.Output) != "/" {
		t.Fatalf("session cwd changed by an override: %q", res.Output)
	}
}

// TestEnv_FunctionsAndAliases persist in a bash session.
func TestEnv_FunctionsAndAliases(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off(), Shell: "bash"})
	run(t, env, envs.Command{Shell: "greet() { echo \"hi $1\"; }; alias ll='echo listing'"})
	if res := run(t, env, envs.Command{Shell: "greet you; ll"}); res.Output != "hi you\nlisting\n" {
		t.Fatalf("functions/aliases not carried: %q", res.Output)
	}
}

// TestEnv_Argv runs an argv without a shell, with 127 for a missing program.
func TestEnv_Argv(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off()})
	if res := run(t, env, envs.Command{Args: []string{"printf", "%s|", "a b", "$HOME"}}); res.Output != "a b|$HOME|" {
		t.Fatalf("argv output %q", res.Output)
	}
	if res := run(t, env, envs.Command{Args: []string{"runbox-missing-xyz"}}); res.Code != 127 {
		t.Fatalf("missing program: code %d", res.Code)
	}
	if _, err := env.Run(t.Context(), envs.Command{}); err == nil {
		t.Fatalf("empty command: no error")
	}
}

// TestEnv_TimeoutKillsEscapedTree: children that setsid, double-fork or
// trap SIGTERM are all gone after a timeout. Without containment a child
// that double-forks away before the teardown starts is reparented to init
// and out of reach, so that case runs only contained.
func TestEnv_TimeoutKillsEscapedTree(t *testing.T) {
	for _, contain := range []bool{false, true} {
		env := open(t, local.Options{Confine: confine.Off(), NoContainment: !contain})
		marker := filepath.Join(t.TempDir(), "pids")
		script := `setsid sleep 603 & echo $! >>` + marker + `; ( trap '' TERM; sleep 601 & echo $! >>` + marker + `; wait ) & sleep 602 & echo $! >>` + marker + `; sleep 60`
		if contain {
			script = `( setsid sleep 600 & echo $! >>` + marker + ` ); nohup sh -c 'sleep 604' >/dev/null 2>&1 & ` + script
		}
		res := run(t, env, envs.Command{Shell: script, Timeout: time.Second})
		if !res.TimedOut {
			t.Fatalf("contain=%v: not timed out: %+v", contain, res.ExitStatus)
		}
		b, _ := os.ReadFile(marker)
		for _, pid := range strings.Fields(string(b)) {
			if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z") {
				t.Errorf("contain=%v: pid %s survived: %s", contain, pid, st)
			}
		}
	}
}

// TestEnv_NoFDLeak: finished commands, run or streamed, give back every
// file descriptor before the environment is closed.
func TestEnv_NoFDLeak(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off()})
	count := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	run(t, env, envs.Command{Shell: "true"}) // warm up lazily opened files
	before := count()
	for i := range 50 {
		c := envs.Command{Shell: "echo hi", PTY: nil}
		if i%2 == 1 {
			c.PTY = &envs.WindowSize{Rows: 10, Cols: 40}
		}
		p, err := env.Start(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, p.Output())
		if _, err := p.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		run(t, env, envs.Command{Shell: "echo hi", SeparateStreams: i%2 == 0})
	}
	// The next command's shell may still be starting (its pipes open for
	// a moment): the count must settle, not merely be low at one instant.
	after := count()
	for deadline := time.Now().Add(10 * time.Second); after > before+3 && time.Now().Before(deadline); after = count() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before+3 {
		t.Fatalf("open descriptors grew from %d to %d over 100 commands", before, after)
	}
}

// TestCapabilities_WithoutOpening: the report made without an environment
// is the one an opened environment gives.
func TestCapabilities_WithoutOpening(t *testing.T) {
	for _, opts := range []local.Options{{}, {NoContainment: true}, {Shell: "sh"}} {
		env := open(t, opts)
		got, _ := json.Marshal(local.Capabilities(t.Context(), opts))
		want, _ := json.Marshal(env.Capabilities())
		if string(got) != string(want) {
			t.Errorf("Capabilities(%+v) = %s; want %s", opts, got, want)
		}
	}
}
