package local_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/termination"
)

// sandboxFixture is a HOME with an ssh key canary, a workspace in it and a
// victim file outside it.
type sandboxFixture struct {
	home, ws, victim, key string
}

func newSandboxFixture(t *testing.T) sandboxFixture {
	t.Helper()
	base := t.TempDir()
	f := sandboxFixture{home: filepath.Join(base, "home"), victim: filepath.Join(base, "outside", "victim")}
	f.ws = filepath.Join(f.home, "ws")
	f.key = filepath.Join(f.home, ".ssh", "id_ed25519")
	for p, text := range map[string]string{f.victim: "ORIGINAL", f.key: "KEY-CANARY", filepath.Join(f.ws, "README"): "r"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func confinerArgv(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, confine.Command}
}

// TestConfine_EveryStartPath: under the workspace profile a write outside
// the workspace and a read of an ssh key fail on every way a command
// starts (pre-started shell, cold shell, argv, under the subreaper), and
// the result names the profile and the violations; under off (the
// control) the same commands succeed.
func TestConfine_EveryStartPath(t *testing.T) {
	paths := []struct {
		name string
		opts func(t *testing.T) local.Options
		argv bool
	}{
		{name: "warm", opts: func(*testing.T) local.Options { return local.Options{} }},
		{name: "cold", opts: func(*testing.T) local.Options { return local.Options{NoPrestart: true} }},
		{name: "argv", opts: func(*testing.T) local.Options { return local.Options{NoPrestart: true} }, argv: true},
		{name: "subreaper", opts: func(t *testing.T) local.Options {
			return local.Options{NoContainment: true, Subreaper: subreaperArgv(t)}
		}},
	}
	for _, sp := range paths {
		for _, profile := range []string{confine.ProfileOff, confine.ProfileWorkspace} {
			t.Run(sp.name+"/"+profile, func(t *testing.T) {
				f := newSandboxFixture(t)
				p := confine.DefaultPolicy(profile, f.ws, f.home)
				opts := sp.opts(t)
				opts.Dir, opts.Confine, opts.Confiner = f.ws, &p, confinerArgv(t)
				env := open(t, opts)
				cmd := envs.Command{Shell: "echo PWNED > " + f.victim + "; cat " + f.key}
				if sp.argv {
					cmd = envs.Command{Args: []string{"/bin/sh", "-c", "echo PWNED > " + f.victim + "; cat " + f.key}}
				}
				res, err := env.Run(context.Background(), cmd)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(f.victim)
				wrote, read := string(b) != "ORIGINAL", strings.Contains(res.Output, "KEY-CANARY")
				if res.Sandbox != profile {
					t.Errorf("Sandbox = %q; want %q", res.Sandbox, profile)
				}
				if profile == confine.ProfileOff {
					if !wrote || !read || len(res.SandboxViolations) != 0 {
						t.Fatalf("control under off: wrote %v read %v violations %v\n%s", wrote, read, res.SandboxViolations, res.Output)
					}
					return
				}
				if wrote || read {
					t.Fatalf("under workspace: wrote %v read %v\n%s", wrote, read, res.Output)
				}
				want := []envs.Violation{
					{Op: "write", Target: f.victim, Rule: "outside the workspace", Source: envs.SourcePrinted},
					{Op: "read", Target: f.key, Rule: "deny list", Source: envs.SourcePrinted},
				}
				for _, w := range want {
					if !slices.Contains(res.SandboxViolations, w) {
						t.Errorf("SandboxViolations = %v; want %v among them\n%s", res.SandboxViolations, w, res.Output)
					}
				}
			})
		}
	}
}

// TestConfine_SessionAndTmpdir: confined shells keep the session's state
// (they write it to the environment's state directory), get a private
// TMPDIR they can write, and Close removes it.
func TestConfine_SessionAndTmpdir(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env, err := local.New(local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	ctx := context.Background()
	res, err := env.Run(ctx, envs.Command{Shell: `mkdir -p sub && cd sub && export KEPT=yes && echo t > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR"`})
	if err != nil || res.Code != 0 {
		t.Fatalf("first: %v %+v", err, res)
	}
	tmp := strings.TrimSpace(res.Output[strings.LastIndex(strings.TrimSpace(res.Output), "\n")+1:])
	fi, err := os.Stat(tmp)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("TMPDIR %q: %v %v; want a 0700 directory", tmp, fi, err)
	}
	res, err = env.Run(ctx, envs.Command{Shell: `pwd; echo "$KEPT"`})
	if err != nil || res.Output != filepath.Join(f.ws, "sub")+"\nyes\n" {
		t.Fatalf("second: %v %q; want the directory and variable kept", err, res.Output)
	}
	if err := env.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR after Close: %v; want it removed", err)
	}
}

// TestConfine_RefusedWithoutTrampoline: a sandbox asked for without the
// means to give it refuses commands (with a message naming sandbox: off)
// instead of running them unconfined.
func TestConfine_RefusedWithoutTrampoline(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	marker := filepath.Join(f.ws, "ran")
	withoutTrampoline(t)
	for _, prestart := range []bool{true, false} {
		env := open(t, local.Options{Dir: f.ws, Confine: &p, NoPrestart: !prestart})
		_, err := env.Run(context.Background(), envs.Command{Shell: "touch " + marker})
		if !errors.Is(err, envs.ErrUnsupported) || !strings.Contains(err.Error(), "confine.Off()") {
			t.Errorf("prestart %v: Run err = %v; want ErrUnsupported naming confine.Off()", prestart, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran")
		}
	}
}

// brokenTrampoline is a Confiner that runs nothing: /bin/false exits 1
// whatever it is given. A command that goes through the trampoline
// fails with it; a pre-started shell, confined from a thread of this
// process, does not need it.
var brokenTrampoline = []string{"/bin/false"}

// TestConfine_WarmShellsNeedNoTrampoline: pre-started shells are
// confined without the trampoline (the argv command, which needs it,
// fails: the control), and hold as it would: the write outside the
// workspace and the key read fail and are reported.
func TestConfine_WarmShellsNeedNoTrampoline(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: brokenTrampoline})
	ctx := context.Background()
	res, err := env.Run(ctx, envs.Command{Args: []string{"/bin/echo", "ARGV-RAN"}})
	if err == nil && (res.Code == 0 || strings.Contains(res.Output, "ARGV-RAN")) {
		t.Fatalf("control: the argv command ran without its trampoline: %+v", res)
	}
	// Several commands back to back: the first shell started with the
	// environment, the next ones while commands ran.
	for i := range 4 {
		res, err := env.Run(ctx, envs.Command{Shell: "echo SHELL-RAN; echo PWNED > " + f.victim + "; cat " + f.key})
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		b, _ := os.ReadFile(f.victim)
		if !strings.Contains(res.Output, "SHELL-RAN") || string(b) != "ORIGINAL" || strings.Contains(res.Output, "KEY-CANARY") {
			t.Fatalf("command %d: want it run, the victim untouched and the key unread; victim %q:\n%s", i, b, res.Output)
		}
		if len(res.SandboxViolations) != 2 || res.Sandbox != confine.ProfileWorkspace {
			t.Errorf("command %d: profile %q, violations %v; want workspace and two", i, res.Sandbox, res.SandboxViolations)
		}
	}
	// Held as a command is without the sandbox: in a container of its
	// own, and what it leaves behind (in a session of its own) is killed
	// and counted.
	marker := fmt.Sprintf("1001.%d", os.Getpid()%10000)
	t.Cleanup(func() { exec9(t, marker) })
	res, err = env.Run(ctx, envs.Command{Shell: "(setsid sleep " + marker + " &); cat /proc/self/cgroup"})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := os.ReadFile("/proc/self/cgroup")
	if d := termination.Detect(ctx); d.Mechanism != termination.ProcessGroup && res.Output == string(own) {
		t.Errorf("the command ran in this process's cgroup %q; want a container of its own (%v)", own, d)
	}
	if res.LeftoverKilled != 1 || liveWithArg(t, marker) != 0 {
		t.Errorf("LeftoverKilled = %d, %d still running; want the setsid child killed and counted", res.LeftoverKilled, liveWithArg(t, marker))
	}
}

// TestConfine_WarmShellsFollowFiles: a file created beside a step toward
// a denied path (here in HOME, which holds .ssh) after the environment
// opened is readable by a command whose shell started after it was
// created, as a command the trampoline starts then would read it: the
// ruleset the shells are confined with is built anew when what it was
// built from changed. At most warmPoolMax shells (3) were started
// before, so the fifth command runs on a later one at the latest.
func TestConfine_WarmShellsFollowFiles(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: brokenTrampoline})
	ctx := context.Background()
	if res, err := env.Run(ctx, envs.Command{Shell: "true"}); err != nil || res.Code != 0 {
		t.Fatalf("first command: %v %+v", err, res)
	}
	added := filepath.Join(f.home, "added-later.txt")
	if err := os.WriteFile(added, []byte("ADDED-LATER"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		res, err := env.Run(ctx, envs.Command{Shell: "cat " + added})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Output, "ADDED-LATER") {
			return
		}
	}
	t.Fatal("no command read a file created in HOME after the environment opened")
}

// TestConfine_WarmShellStartIsRunboxs: a confined command may write its
// session's state directory (it saves its state there), but not what a
// pre-started shell runs at its start: that runs while the thread that
// started the shell may still live in the shell's sandbox, so it must be
// runbox's own code. A command that puts a line at the head of every
// script in its state directory changes nothing the next shells run.
func TestConfine_WarmShellStartIsRunboxs(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: brokenTrampoline})
	ctx := context.Background()
	inject := `d=$(dirname "$__rb_out") && for x in "$d"/*.bash; do [ -f "$x" ] && sed -i '1i echo INJECTED >&2' "$x"; done; echo DONE`
	res, err := env.Run(ctx, envs.Command{Shell: inject})
	if err != nil || !strings.Contains(res.Output, "DONE") {
		t.Fatalf("inject: %v %+v", err, res)
	}
	for i := range 5 {
		res, err := env.Run(ctx, envs.Command{Shell: "echo RAN"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Output, "INJECTED") || !strings.Contains(res.Output, "RAN") {
			t.Fatalf("command %d after the injection:\n%s", i, res.Output)
		}
	}
}

// TestConfine_WritableShellThroughTrampoline: a shell binary the commands
// could overwrite (here in the workspace) is never started from a
// confined thread, whose sandbox it would share before the thread ends:
// with a trampoline that runs nothing its commands fail, where the same
// commands with the system's bash run (the control).
func TestConfine_WritableShellThroughTrampoline(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	own := filepath.Join(f.ws, "bin", "bash")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bash)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		shell string
		runs  bool
	}{{bash, true}, {own, false}} {
		env := open(t, local.Options{Dir: f.ws, Shell: c.shell, Confine: &p, Confiner: brokenTrampoline})
		res, err := env.Run(ctx, envs.Command{Shell: "echo RAN"})
		ran := err == nil && strings.Contains(res.Output, "RAN")
		if ran != c.runs {
			t.Errorf("shell %s: ran = %v (%v %+v); want %v", c.shell, ran, err, res, c.runs)
		}
	}
}

// BenchmarkRun_Sandboxed measures `true` through the local backend with
// and without the workspace sandbox, on pre-started shells (confined from
// a thread of this process while the shell is started ahead of the
// command) and cold (where the trampoline is on every command's path).
func BenchmarkRun_Sandboxed(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	p := confine.DefaultPolicy(confine.ProfileWorkspace, ws, os.Getenv("HOME"))
	for _, c := range []struct {
		name string
		opts local.Options
	}{
		{"true", local.Options{Dir: ws}},
		{"true.sandboxed", local.Options{Dir: ws, Confine: &p, Confiner: []string{exe, confine.Command}}},
		{"true-cold", local.Options{Dir: ws, NoPrestart: true}},
		{"true.sandboxed-cold", local.Options{Dir: ws, NoPrestart: true, Confine: &p, Confiner: []string{exe, confine.Command}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			env, err := local.New(c.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close(context.Background())
			for b.Loop() {
				if res, err := env.Run(b.Context(), envs.Command{Shell: "true"}); err != nil || res.Code != 0 {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// TestConfine_PTY: a confined command on a terminal can still use it
// (the size ioctl on its own terminal and on /dev/tty), while the sandbox
// holds.
func TestConfine_PTY(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	res, err := env.Run(context.Background(), envs.Command{
		Shell: "stty size; stty size < /dev/tty; echo x > " + f.victim,
		PTY:   &envs.WindowSize{Rows: 12, Cols: 34},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(res.Output, "12 34") != 2 {
		t.Errorf("output = %q; want the terminal size twice", res.Output)
	}
	if b, _ := os.ReadFile(f.victim); string(b) != "ORIGINAL" || len(res.SandboxViolations) != 1 {
		t.Errorf("victim %q, violations %v; want it untouched and one violation", b, res.SandboxViolations)
	}
}

// TestConfine_OtherSessionsTmpdir: a confined command cannot read what
// another session left in its TMPDIR (the control: the file is there and
// an unconfined session reads it).
func TestConfine_OtherSessionsTmpdir(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	a := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	b := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	ctx := context.Background()
	res, err := a.Run(ctx, envs.Command{Shell: `echo OTHER-SESSION-DATA > "$TMPDIR/notes" && echo "$TMPDIR/notes"`})
	if err != nil || res.Code != 0 {
		t.Fatalf("a: %v %+v", err, res)
	}
	notes := strings.TrimSpace(res.Output)
	off := confine.Policy{Profile: confine.ProfileOff}
	control := open(t, local.Options{Dir: f.ws, Confine: &off})
	if res, err := control.Run(ctx, envs.Command{Shell: "cat " + notes}); err != nil || !strings.Contains(res.Output, "OTHER-SESSION-DATA") {
		t.Fatalf("control: %v %q", err, res.Output)
	}
	res, err = b.Run(ctx, envs.Command{Shell: "cat " + notes})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Output, "OTHER-SESSION-DATA") || !slices.Contains(res.SandboxViolations, envs.Violation{Op: "read", Target: notes, Rule: "deny list", Source: envs.SourcePrinted}) {
		t.Errorf("b read a's TMPDIR: %q, violations %v", res.Output, res.SandboxViolations)
	}
}

// TestConfine_EarlyResultNamesProfile: a result made without starting
// anything (command not found) still names the profile in force.
func TestConfine_EarlyResultNamesProfile(t *testing.T) {
	f := newSandboxFixture(t)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	res, err := env.Run(context.Background(), envs.Command{Args: []string{"no-such-program-here"}})
	if err != nil || res.Code != envs.ExitNotFound || res.Sandbox != confine.ProfileWorkspace {
		t.Errorf("Run = %+v, %v; want exit %d under workspace", res, err, envs.ExitNotFound)
	}
}

// TestConfine_InvalidPolicy: a policy that names no profile (or a relative
// workspace) is an error of New, not a silently unconfined environment.
func TestConfine_InvalidPolicy(t *testing.T) {
	for _, p := range []confine.Policy{{}, {Profile: confine.ProfileWorkspace, Workspace: "relative"}} {
		if env, err := local.New(local.Options{Confine: &p, Confiner: confinerArgv(t)}); err == nil {
			env.Close(context.Background())
			t.Errorf("New with %+v succeeded", p)
		}
	}
}

// TestConfine_RefusedConnectInResult: a connect the sandbox refuses is in
// the result's violations, with its address, though the command prints
// nothing about it, on a pre-started shell and on a cold one.
func TestConfine_RefusedConnectInResult(t *testing.T) {
	f := newSandboxFixture(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	silent := fmt.Sprintf(`(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo CONNECTED; true`, ln.Addr().(*net.TCPAddr).Port)
	for _, profile := range []string{confine.ProfileOff, confine.ProfileWorkspace} {
		for _, cold := range []bool{false, true} {
			p := confine.DefaultPolicy(profile, f.ws, f.home)
			p.Network = confine.NetworkAllowlist
			env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t), NoPrestart: cold})
			res, err := env.Run(context.Background(), envs.Command{Shell: silent})
			if err != nil {
				t.Fatal(err)
			}
			reported := slices.Contains(res.SandboxViolations, envs.Violation{Op: "connect", Target: ln.Addr().String(),
				Rule: "port not allowed (only the session proxy, allowed ports and the command's own servers)", Source: envs.SourceDecided})
			switch connected := strings.Contains(res.Output, "CONNECTED"); {
			case profile == confine.ProfileOff && (!connected || reported):
				t.Fatalf("control under off (cold %v): connected %v, violations %+v", cold, connected, res.SandboxViolations)
			case profile != confine.ProfileOff && (connected || !reported || strings.TrimSpace(res.Output) != ""):
				t.Errorf("cold %v: output %q, violations %+v; want no output and the refused connect", cold, res.Output, res.SandboxViolations)
			}
		}
	}
}

// TestNew_ConfinedByDefault: an environment made with no sandbox options
// at all, as the README's Go example makes it, is confined (workspace,
// the home's secrets denied), with the trampoline found on PATH; only
// confine.Off(), chosen, runs the same command unconfined.
func TestNew_ConfinedByDefault(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "off"}[off], func(t *testing.T) {
			f := newSandboxFixture(t)
			opts := local.Options{Dir: f.ws, BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home}}
			if off {
				opts.Confine = confine.Off()
			}
			env, err := local.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { env.Close(context.Background()) })
			res, err := env.Run(t.Context(), envs.Command{Shell: "echo PWNED > " + f.victim + "; cat " + f.key})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(f.victim)
			wrote, read := string(b) != "ORIGINAL", strings.Contains(res.Output, "KEY-CANARY")
			if off {
				if !wrote || !read || res.Sandbox != confine.ProfileOff {
					t.Fatalf("control under off: wrote %v read %v sandbox %q\n%s", wrote, read, res.Sandbox, res.Output)
				}
				return
			}
			if wrote || read || res.Sandbox != confine.ProfileWorkspace {
				t.Fatalf("default: wrote %v read %v sandbox %q; want neither, under workspace\n%s", wrote, read, res.Sandbox, res.Output)
			}
		})
	}
}

// TestNew_NoTrampolineRefuses: with no trampoline to be found, the
// default environment refuses every command (an error naming what is
// missing and matching envs.ErrUnsupported) and runs nothing; it never
// falls back to running unconfined.
func TestNew_NoTrampolineRefuses(t *testing.T) {
	withoutTrampoline(t)
	f := newSandboxFixture(t)
	env, err := local.New(local.Options{Dir: f.ws, BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	for _, c := range []envs.Command{{Shell: "echo PWNED > " + f.victim}, {Args: []string{"/bin/sh", "-c", "echo PWNED > " + f.victim}}} {
		_, err := env.Run(t.Context(), c)
		if !errors.Is(err, envs.ErrUnsupported) || !errors.Is(err, confine.ErrNoTrampoline) {
			t.Errorf("Run(%v) error = %v; want ErrUnsupported and ErrNoTrampoline", c, err)
		}
		if b, _ := os.ReadFile(f.victim); string(b) != "ORIGINAL" {
			t.Fatalf("the command ran: victim = %q", b)
		}
	}
}

// withoutTrampoline takes runbox-confine off PATH for the test.
func withoutTrampoline(t *testing.T) {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, confine.Trampoline)); err != nil {
			keep = append(keep, d)
		}
	}
	t.Setenv("PATH", strings.Join(keep, string(os.PathListSeparator)))
	if _, err := confine.Locate(); err == nil {
		t.Skip("a runbox-confine is installed beside the test binary")
	}
}

// TestConfine_GitLeftoversMadeInert: a confined command that leaves a
// commondir to a git directory of its own with core.fsmonitor set (which
// the user's next git status would run outside the sandbox) gets a
// decided "git" violation and a warning naming the key, and the key is
// gone from that configuration; a command that leaves nothing gets
// neither. (internal/gitguard tests the attacks one by one.)
func TestConfine_GitLeftoversMadeInert(t *testing.T) {
	f := newSandboxFixture(t)
	if err := os.MkdirAll(filepath.Join(f.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.ws, ".git", "config"), []byte("[core]\n"), 0o644)
	p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
	env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t)})
	run := func(script string) *envs.Result {
		res, err := env.Run(context.Background(), envs.Command{Shell: script})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("true"); len(res.Warnings) != 0 || len(res.SandboxViolations) != 0 {
		t.Fatalf("a command that left nothing: warnings %q, violations %+v", res.Warnings, res.SandboxViolations)
	}
	res := run("mkdir -p evil && printf '[core]\\n\\tfsmonitor = touch RAN\\n' > evil/config && echo ../evil > .git/commondir")
	found := slices.ContainsFunc(res.SandboxViolations, func(v envs.Violation) bool {
		return v.Op == "git" && v.Rule == "git-config core.fsmonitor" && v.Source == envs.SourceDecided
	})
	if !found || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "core.fsmonitor") }) {
		t.Fatalf("violations %+v, warnings %q; want core.fsmonitor found and said", res.SandboxViolations, res.Warnings)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "evil", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("evil/config still holds the fsmonitor: %q", b)
	}
}

// TestConfine_RepositoryMadeByACommandIsProtectedAtOnce: a command makes
// a repository at the workspace's root (git init). The next command's
// pre-started shell was started before the repository existed, in a
// sandbox that does not keep its hooks and config read-only: it is not
// used, and the command starts in a sandbox made now. So no later
// command, the very next one included, writes the repository's hooks or
// config while it runs. The control: with the protection off the same
// commands write them.
func TestConfine_RepositoryMadeByACommandIsProtectedAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the read-only mount layer needs root")
	}
	write := "echo 'echo evil' >> .git/hooks/pre-commit && echo HOOK; echo evil >> .git/config && echo CONFIG"
	for _, protect := range []bool{true, false} {
		f := newSandboxFixture(t)
		p := confine.DefaultPolicy(confine.ProfileWorkspace, f.ws, f.home)
		p.ProtectGit = protect
		env := open(t, local.Options{Dir: f.ws, Confine: &p, Confiner: confinerArgv(t), KeepLeftovers: true})
		ctx := context.Background()
		if res, err := env.Run(ctx, envs.Command{Shell: "mkdir -p .git/hooks && printf '[core]\\n' > .git/config"}); err != nil || res.Code != 0 {
			t.Fatalf("making the repository: %v %+v", err, res)
		}
		for i := range 3 {
			res, err := env.Run(ctx, envs.Command{Shell: write})
			if err != nil {
				t.Fatal(err)
			}
			wrote := strings.Contains(res.Output, "HOOK") || strings.Contains(res.Output, "CONFIG")
			if protect && wrote {
				t.Fatalf("command %d after the repository was made wrote its hooks or config:\n%s", i+1, res.Output)
			}
			if !protect && !wrote {
				t.Fatalf("control: without the protection command %d should write the hook:\n%s", i+1, res.Output)
			}
		}
	}
}
