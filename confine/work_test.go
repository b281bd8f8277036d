//go:build linux

package confine_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/internal/integration"
)

// TestWorkspace_OrdinaryWork runs what an agent does all day under the
// workspace profile, as root and as nobody: each must still work, and
// Explain must find nothing in its output.
func TestWorkspace_OrdinaryWork(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		cases := []struct {
			name   string
			script string
			want   string
		}{
			{"write-tmpdir", `echo tmp-ok > "$TMPDIR/x" && cat "$TMPDIR/x"`, "tmp-ok"},
			{"write-workspace", `mkdir -p a/b && echo ws-ok > a/b/f && mv a/b/f a/g && cat a/g && rm -r a`, "ws-ok"},
			{"write-cache", `mkdir -p "$XDG_CACHE_HOME/tool" && echo cache-ok > "$XDG_CACHE_HOME/tool/x" && cat "$XDG_CACHE_HOME/tool/x" && touch "$GOCACHE/x" "$npm_config_cache/x"`, "cache-ok"},
			{"read-outside", `cat "$VICTIM" ~/.bashrc`, "VICTIM-ORIGINAL"},
			{"dev-null", `echo gone > /dev/null && head -c 4 /dev/zero | wc -c`, "4"},
			{"git-commit", `git init -q && echo a > a && git add a && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline | wc -l`, "1"},
			{"pipes-and-subshells", `(echo sub-ok) | cat`, "sub-ok"},
			{"dev-stdout-stderr", `echo out-ok > /dev/stdout; echo err-ok > /dev/stderr; echo fd-ok > /proc/self/fd/1`, "fd-ok"},
			{"process-substitution", `cat <(echo subst-in) && echo subst-out > >(cat)`, "subst-in"},
			{"dev-urandom", `head -c 1 /dev/urandom | wc -c`, "1"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				f := newFixture(t, u)
				p := f.policy(confine.ProfileWorkspace)
				out, code := f.run(t, p, c.script, "VICTIM="+f.victim)
				if code != 0 || !strings.Contains(out, c.want) {
					// Reopening the test's pipes through /dev/stdout is
					// refused to nobody by their modes, sandbox or not.
					g := newFixture(t, u)
					if cout, ccode := g.run(t, g.policy(confine.ProfileOff), c.script, "VICTIM="+g.victim); ccode != 0 {
						t.Skipf("fails unconfined too (exit %d): %s", ccode, cout)
					}
					t.Fatalf("exit %d, output:\n%s\nwant %q", code, out, c.want)
				}
				if vs := confine.Explain(p, out); len(vs) != 0 {
					t.Errorf("Explain = %v; want none", vs)
				}
			})
		}
	})
}

// TestWorkspace_GoBuildAndTest builds and tests a small module in the
// workspace with the real Go build cache made writable by the caller
// (root only: the cache is root's), as sandbox.writable would.
func TestWorkspace_GoBuildAndTest(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root")
	}
	if testing.Short() {
		t.Skip("builds a module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		integration.Skip(t, "no go on PATH: %v", err)
	}
	f := newFixture(t, users[0])
	files := map[string]string{
		"go.mod":       "module example.com/tiny\n\ngo 1.22\n",
		"tiny.go":      "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
		"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(f.ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := goEnv(t, goBin, "GOCACHE")
	p := f.policy(confine.ProfileWorkspace)
	p.Writable = append(p.Writable, cache)
	p.Env["GOCACHE"] = cache
	out, code := f.run(t, p, `go build ./... && go test -count=1 ./...`,
		"GOCACHE="+cache, "GOMODCACHE="+filepath.Join(f.home, "go", "pkg", "mod"), "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("go build/test under workspace: exit %d\n%s", code, out)
	}
}

func goEnv(t *testing.T, goBin, name string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestWorkspace_ProtectGit: in a repository that exists when the command
// starts, commits still work but hooks and config cannot be written, and
// .git cannot be swapped for another (root: the mount namespace needs
// it). The control run under off shows the same writes work unconfined.
func TestWorkspace_ProtectGit(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root for the mount namespace")
	}
	attacks := []struct{ name, script string }{
		{"hook", `echo 'echo evil' > .git/hooks/pre-commit && echo WROTE`},
		{"config", `git config core.hooksPath /tmp && echo WROTE`},
		{"swap-git-dir", `mv .git .git-old && mkdir -p .git/hooks && echo WROTE`},
	}
	viaBoth(t, func(t *testing.T, thread bool) {
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				for _, profile := range []string{confine.ProfileOff, confine.ProfileWorkspace} {
					f := newFixture(t, users[0])
					f.thread = thread
					if out, err := exec.Command("git", "init", "-q", f.ws).CombinedOutput(); err != nil {
						t.Fatalf("git init: %v\n%s", err, out)
					}
					p := f.policy(profile)
					out, _ := f.run(t, p, a.script)
					wrote := strings.Contains(out, "WROTE")
					if profile == confine.ProfileOff && !wrote {
						t.Fatalf("control run under off failed:\n%s", out)
					}
					if profile == confine.ProfileWorkspace {
						if wrote {
							t.Fatalf("under workspace %s worked:\n%s", a.name, out)
						}
						vs := confine.Explain(p, out)
						if !slices.ContainsFunc(vs, func(v confine.Violation) bool { return strings.HasPrefix(v.Rule, "protected: ") }) {
							t.Errorf("Explain = %v; want a protected-path violation in:\n%s", vs, out)
						}
						commit := `echo a > a && git add a && git -c user.name=t -c user.email=t@example.com commit -qm c && echo COMMITTED`
						if out, _ := f.run(t, p, commit); !strings.Contains(out, "COMMITTED") {
							t.Fatalf("git commit under workspace failed:\n%s", out)
						}
					}
				}
			})
		}
	})
}

// TestCapabilities_RootLosesThem: a root command keeps its uid but has no
// capability at all, in any set, so execve of anything grants none.
func TestCapabilities_RootLosesThem(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root")
	}
	script := `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; grep NoNewPrivs /proc/self/status; id -u`
	viaBoth(t, func(t *testing.T, thread bool) {
		for _, profile := range []string{confine.ProfileOff, confine.ProfileWorkspace} {
			f := newFixture(t, users[0])
			f.thread = thread
			out, code := f.run(t, f.policy(profile), script)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", profile, code, out)
			}
			zero := strings.Count(out, "0000000000000000")
			switch profile {
			case confine.ProfileOff:
				if zero == 5 {
					t.Fatalf("control run: root has no capabilities even unconfined:\n%s", out)
				}
			default:
				if zero != 5 || !strings.Contains(out, "NoNewPrivs:\t1") || !strings.HasSuffix(strings.TrimSpace(out), "0") {
					t.Fatalf("under workspace want every capability set empty, no_new_privs and uid 0:\n%s", out)
				}
			}
		}
	})
}

// viaBoth runs f for programs started through the trampoline and for
// programs started from a thread a confine.Prepared confined.
func viaBoth(t *testing.T, f func(t *testing.T, thread bool)) {
	t.Run("trampoline", func(t *testing.T) { f(t, false) })
	t.Run("thread", func(t *testing.T) { f(t, true) })
}

// TestNetwork_AllowedPortsOnly: under allowlist the proxy's port is
// reachable and a loopback server the command starts can be bound; under
// network off not even an allowed port is.
func TestNetwork_AllowedPortsOnly(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		script := `exec 3<>/dev/tcp/127.0.0.1/$PORT && echo CONNECTED`
		for _, c := range []struct {
			network string
			want    bool
		}{{confine.NetworkAllowlist, true}, {confine.NetworkOff, false}, {confine.NetworkOpen, true}} {
			f := newFixture(t, u)
			p := f.policy(confine.ProfileWorkspace)
			p.Network = c.network
			p.ProxyPorts = []int{port}
			out, _ := f.run(t, p, script, "PORT="+strconv.Itoa(port))
			if got := strings.Contains(out, "CONNECTED"); got != c.want {
				t.Errorf("network %s: connected = %v; want %v\n%s", c.network, got, c.want, out)
			}
		}
	})
}

// TestTrampoline_NoExtraDescriptorsAndArgv0: the program sees only the
// descriptors its parent gave it (the same as ls started directly), and
// its own argv[0].
func TestTrampoline_NoExtraDescriptorsAndArgv0(t *testing.T) {
	f := newFixture(t, users[0])
	p := f.policy(confine.ProfileWorkspace)
	bare, _ := f.runArgv(t, f.policy(confine.ProfileOff), "/bin/ls", []string{"ls", "/proc/self/fd"})
	out, code := f.runArgv(t, p, "/bin/ls", []string{"ls", "/proc/self/fd"})
	if code != 0 || out != bare || !strings.HasPrefix(out, "0\n1\n") {
		t.Errorf("descriptors confined = %q (exit %d); unconfined %q", out, code, bare)
	}
	out, code = f.runArgv(t, p, "/bin/cat", []string{"custom-name", "/proc/self/cmdline"})
	if code != 0 || !strings.HasPrefix(out, "custom-name\x00") {
		t.Errorf("cmdline = %q (exit %d); want argv[0] custom-name", out, code)
	}
}

// TestTrampoline_RefusesRatherThanRunUnconfined: when a layer cannot be
// applied the program does not run and the trampoline exits 126.
func TestTrampoline_RefusesRatherThanRunUnconfined(t *testing.T) {
	f := newFixture(t, users[0])
	marker := filepath.Join(f.tmp, "ran")
	cases := []struct {
		name string
		args []string
	}{
		{"bad-json", []string{"{", "/bin/touch", "touch", marker}},
		{"unknown-profile", []string{`{"profile":"loose","workspace":"/"}`, "/bin/touch", "touch", marker}},
		{"missing-workspace", []string{`{"profile":"workspace","workspace":"` + filepath.Join(f.base, "absent") + `"}`, "/bin/touch", "touch", marker}},
		{"no-args", nil},
	}
	t.Run("missing-program", func(t *testing.T) {
		out, code := f.runArgv(t, f.policy(confine.ProfileWorkspace), filepath.Join(f.base, "absent"), []string{"absent"})
		if code != 127 || !strings.Contains(out, "runbox: sandbox:") {
			t.Errorf("exit %d, %q; want 127 and a sandbox error", code, out)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(f.exe, append([]string{confine.Command}, c.args...)...)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 126 {
				t.Fatalf("err = %v; want exit 126\n%s", err, out)
			}
			if !strings.Contains(string(out), "runbox: sandbox:") {
				t.Errorf("stderr = %q; want a sandbox error", out)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the program ran")
			}
		})
	}
}
