package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/local"
)

// warmShells lists the pre-started shells of this test process: bash
// processes running the warm shell's -c string, children of this process
// or of a subreaper it started (not the subreaper itself, whose argv
// holds the shell's).
func warmShells(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(string(cmdline), "unset __rb_cmd") || strings.Contains(string(cmdline), "__reap") || !testproc.Alive(pid) {
			continue
		}
		for p, hops := testproc.Parent(pid), 0; p > 1 && hops < 3; p, hops = testproc.Parent(p), hops+1 {
			if p == self {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// warmModes are the ways a warm shell is held: in its own cgroup or
// scope, in a process group only, and under the subreaper.
func warmModes(t *testing.T) map[string]local.Options {
	return map[string]local.Options{
		"Contained":     {},
		"ProcessGroups": {NoContainment: true},
		"Subreaper":     {NoContainment: true, Subreaper: subreaperArgv(t)},
	}
}

// TestWarm_SessionStateCarried protects the session across commands that
// run on pre-started shells: directory, exports (new, changed back to the
// environment's value, with characters bash escapes), unset variables,
// functions and aliases, and a per-command directory that does not move
// the session.
func TestWarm_SessionStateCarried(t *testing.T) {
	dir := t.TempDir()
	base := []string{"PATH=/usr/bin:/bin", "HOME=/root", "KEEP_ME=yes", "FOO=bar"}
	for name, opts := range warmModes(t) {
		t.Run(name, func(t *testing.T) {
			opts.BaseEnv, opts.Dir = base, "/"
			env := open(t, opts)
			steps := []struct{ cmd, want string }{
				{"cd " + dir + " && export NEW='a\"b$c`d\\e' FOO=baz && unset KEEP_ME && greet() { echo hi $1; } && alias ll='echo listing'", ""},
				{"pwd; echo \"$NEW|$FOO|${KEEP_ME-unset}\"; greet you; ll", dir + "\na\"b$c`d\\e|baz|unset\nhi you\nlisting\n"},
				{"export FOO=bar; cd /", ""},
				{"pwd; echo $FOO", "/\nbar\n"},
				{"pwd", "/tmp\n"}, // with Dir below
				{"pwd; echo $0 $LINENO\necho $LINENO", "/\nbash 1\n2\n"},
			}
			for i, s := range steps {
				c := envs.Command{Shell: s.cmd}
				if s.want == "/tmp\n" {
					c.Dir = "/tmp"
				}
				res := run(t, env, c)
				if res.Code != 0 || res.Output != s.want {
					t.Fatalf("step %d (%q): exit %d, output %q; want 0, %q", i, s.cmd, res.Code, res.Output, s.want)
				}
			}
		})
	}
}

// TestWarm_ScrubbedEnvironment: a pre-started shell is built like any
// child: what spawn withholds from the parent's environment is absent
// from every command, the first included, and a command's own variables
// reach that command only.
func TestWarm_ScrubbedEnvironment(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOME=/root", "OPENAI_API_KEY=sk-withheld-1", "KEEP_ME=yes"}
	env := open(t, local.Options{Confine: confine.Off(), BaseEnv: base})
	for i := range 3 {
		c := envs.Command{Shell: "env; echo ---; cat /proc/$$/environ | tr '\\0' '\\n'"}
		if i == 1 {
			c.Env = map[string]string{"ONLY_ONCE": "here"}
		}
		res := run(t, env, c)
		if strings.Contains(res.Output, "sk-withheld-1") || strings.Contains(res.Output, "OPENAI_API_KEY") {
			t.Errorf("command %d sees the withheld variable: %q", i, res.Output)
		}
		if !strings.Contains(res.Output, "KEEP_ME=yes") {
			t.Errorf("command %d lost a harmless variable: %q", i, res.Output)
		}
		if got, want := strings.Contains(res.Output, "ONLY_ONCE=here"), i == 1; got != want {
			t.Errorf("command %d sees its own variable: %v; want %v", i, got, want)
		}
		exported, _, _ := strings.Cut(res.Output, "---")
		if strings.Contains(exported, "__RB_") || strings.Contains(exported, "BASH_ENV") {
			t.Errorf("command %d exports runbox's own variables: %q", i, exported)
		}
	}
}

// TestWarm_TimeoutKillsWholeTree: a timed-out command on a pre-started
// shell takes every process it started with it, those that setsid and
// double-fork included, and the next command runs normally.
func TestWarm_TimeoutKillsWholeTree(t *testing.T) {
	for name, opts := range warmModes(t) {
		if name == "ProcessGroups" {
			continue // a double-forked setsid child escapes a process group (see Capabilities)
		}
		t.Run(name, func(t *testing.T) {
			env := open(t, opts)
			run(t, env, envs.Command{Shell: "true"}) // the next one runs on a warm shell
			marker := filepath.Join(t.TempDir(), "pids")
			script := `( setsid sleep 600 & echo $! >>` + marker + ` ); ( trap '' TERM; sleep 601 & echo $! >>` + marker + `; wait ) & echo $$ >>` + marker + `; sleep 60`
			res := run(t, env, envs.Command{Shell: script, Timeout: 500 * time.Millisecond})
			if !res.TimedOut {
				t.Fatalf("not timed out: %+v", res.ExitStatus)
			}
			b, _ := os.ReadFile(marker)
			pids := strings.Fields(string(b))
			if len(pids) != 3 {
				t.Fatalf("marker has %d pids; want 3: %q", len(pids), b)
			}
			for _, pid := range pids {
				n, _ := strconv.Atoi(pid)
				if testproc.Alive(n) {
					t.Errorf("pid %s survived the timeout", pid)
				}
			}
			if res := run(t, env, envs.Command{Shell: "echo after"}); res.Output != "after\n" {
				t.Errorf("command after the timeout: %q", res.Output)
			}
		})
	}
}

// TestWarm_LeftoversCounted: what a command leaves running is killed and
// counted; the idle shell waiting for the next command never is.
func TestWarm_LeftoversCounted(t *testing.T) {
	for name, opts := range warmModes(t) {
		if name == "ProcessGroups" {
			continue // nothing holds a process group's leftovers after its leader exits
		}
		t.Run(name, func(t *testing.T) {
			env := open(t, opts)
			for i := range 4 {
				res := run(t, env, envs.Command{Shell: "true"})
				if res.LeftoverKilled != 0 {
					t.Fatalf("command %d: %d leftovers counted; want 0", i, res.LeftoverKilled)
				}
			}
			res := run(t, env, envs.Command{Shell: "sleep 600 & sleep 601 & echo started"})
			if res.Code != 0 || res.LeftoverKilled != 2 {
				t.Fatalf("exit %d, %d leftovers; want 0 and 2", res.Code, res.LeftoverKilled)
			}
			if res := run(t, env, envs.Command{Shell: "true"}); res.LeftoverKilled != 0 {
				t.Fatalf("after leftovers: %d counted; want 0", res.LeftoverKilled)
			}
		})
	}
}

// TestWarm_CloseEndsIdleShell: Close kills and reaps the idle shell and
// removes its container; a command after Close fails with ErrClosed and
// starts nothing.
func TestWarm_CloseEndsIdleShell(t *testing.T) {
	for name, opts := range warmModes(t) {
		t.Run(name, func(t *testing.T) {
			opts.Grace = 300 * time.Millisecond
			env, err := local.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { env.Close(context.Background()) })
			run(t, env, envs.Command{Shell: "true"})
			testwait.Until(t, "the next shell to be started", func() bool { return len(warmShells(t)) >= 1 })
			pids := warmShells(t)
			var cgs []string
			for _, pid := range pids {
				cgs = append(cgs, ownCgroupDirs(t, pid)...)
			}
			if err := env.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, pid := range pids {
				if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
					t.Errorf("warm shell %d still exists after Close: %s", pid, st)
				}
			}
			for _, d := range cgs {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("warm shell's cgroup %s still exists after Close", d)
				}
			}
			_, err = env.Run(t.Context(), envs.Command{Shell: "echo ran"})
			if !errors.Is(err, envs.ErrClosed) {
				t.Errorf("Run after Close: %v; want ErrClosed", err)
			}
			if n := len(warmShells(t)); n != 0 {
				t.Errorf("%d warm shells after Close", n)
			}
		})
	}
}

// ownCgroupDirs returns the cgroup directories of pid that runbox made
// for it (named runbox-*), where the mechanism is a cgroup.
func ownCgroupDirs(t *testing.T, pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(filepath.Base(parts[2]), "runbox-") {
			continue
		}
		root := "/sys/fs/cgroup"
		switch {
		case parts[1] == "":
			if _, err := os.Stat("/sys/fs/cgroup/unified"); err == nil {
				root = "/sys/fs/cgroup/unified"
			}
		default:
			root = filepath.Join(root, strings.TrimPrefix(parts[1], "name="))
		}
		dirs = append(dirs, filepath.Join(root, parts[2]))
	}
	return dirs
}

// TestWarm_KilledShellReplaced: a pre-started shell killed while it waits
// is noticed when a command takes it; the command runs anyway, and so do
// the ones after it, however many times the shell is killed.
func TestWarm_KilledShellReplaced(t *testing.T) {
	for name, opts := range warmModes(t) {
		t.Run(name, func(t *testing.T) {
			env := open(t, opts)
			for i := range 6 {
				// Killed again and again, the environment stops
				// pre-starting shells: the later commands start cold.
				if i < 2 {
					testwait.Until(t, "a warm shell", func() bool { return len(warmShells(t)) >= 1 })
				}
				for _, pid := range warmShells(t) {
					syscall.Kill(pid, syscall.SIGKILL)
					testwait.Until(t, "the killed shell to die", func() bool { return !testproc.Alive(pid) })
				}
				want := fmt.Sprintf("run %d\n", i)
				res := run(t, env, envs.Command{Shell: "echo run " + strconv.Itoa(i)})
				if res.Code != 0 || res.Output != want {
					t.Fatalf("after killing the warm shell: exit %d, output %q; want 0, %q", res.Code, res.Output, want)
				}
			}
		})
	}
}

// TestWarm_ConcurrentRuns: concurrent commands share one pre-started
// shell at most; each gets its own output and status, and the session
// stays usable.
func TestWarm_ConcurrentRuns(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off()})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			res, err := env.Run(t.Context(), envs.Command{Shell: fmt.Sprintf("echo %d; exit %d", i, i%3)})
			switch {
			case err != nil:
				errs <- err
			case res.Output != fmt.Sprintf("%d\n", i) || res.Code != i%3:
				errs <- fmt.Errorf("command %d: exit %d, output %q", i, res.Code, res.Output)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	run(t, env, envs.Command{Shell: "export AFTER=1"})
	if res := run(t, env, envs.Command{Shell: "echo $AFTER"}); res.Output != "1\n" {
		t.Errorf("session after concurrent commands: %q", res.Output)
	}
}

// TestWarm_NoPrestart: with NoPrestart nothing waits between commands.
func TestWarm_NoPrestart(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off(), NoPrestart: true})
	run(t, env, envs.Command{Shell: "export X=1"})
	if res := run(t, env, envs.Command{Shell: "echo $X"}); res.Output != "1\n" {
		t.Fatalf("session: %q", res.Output)
	}
	if n := len(warmShells(t)); n != 0 {
		t.Fatalf("%d warm shells with NoPrestart", n)
	}
}

// TestWarm_CommandRunsOnPrestartedShell: a command runs in the shell that
// was waiting for it, which was already in a container of its own (where
// the host has cgroups) before the command arrived.
func TestWarm_CommandRunsOnPrestartedShell(t *testing.T) {
	for name, opts := range warmModes(t) {
		t.Run(name, func(t *testing.T) {
			env := open(t, opts)
			// The environment starts one shell when it opens; no command
			// has come back to back yet, so there is no second.
			testwait.Until(t, "a warm shell", func() bool { return len(warmShells(t)) == 1 })
			pid := warmShells(t)[0]
			contained := name == "Contained" && env.Capabilities()[envs.CapContainment].State == envs.Active
			if contained && len(ownCgroupDirs(t, pid)) == 0 {
				// It may be seen a moment before it is placed; it is
				// placed before it can be taken.
				testwait.Until(t, "the idle shell in a container of its own", func() bool { return len(ownCgroupDirs(t, pid)) > 0 })
			}
			res := run(t, env, envs.Command{Shell: "echo $$; cat /proc/self/cgroup"})
			if got, _, _ := strings.Cut(res.Output, "\n"); got != strconv.Itoa(pid) {
				t.Fatalf("command ran in shell %s; want the waiting one, %d", got, pid)
			}
			if contained && !strings.Contains(res.Output, "runbox-") {
				t.Errorf("command not in its container: %q", res.Output)
			}
		})
	}
}
