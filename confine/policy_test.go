//go:build linux

package confine_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
)

// TestDefaultPolicy_Lists: the documented caches are writable, the
// documented secrets denied, and the workspace is the git root above the
// directory.
func TestDefaultPolicy_Lists(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	home := "/home/u"
	p := confine.DefaultPolicy(confine.ProfileWorkspace, sub, home)
	if p.Workspace != root {
		t.Errorf("Workspace = %s; want the git root %s", p.Workspace, root)
	}
	if p.Network != confine.NetworkAllowlist || !p.ProtectGit {
		t.Errorf("Network = %q, ProtectGit = %v; want allowlist, true", p.Network, p.ProtectGit)
	}
	// The workspace's own caches, not the host's.
	t.Setenv("XDG_CACHE_HOME", "")
	p = confine.DefaultPolicy(confine.ProfileWorkspace, sub, home)
	cacheRoot := confine.PrivateCacheRoot(home, os.Getenv)
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"} {
		if !strings.HasPrefix(p.Env[v], cacheRoot+"/"+filepath.Base(root)+"-") {
			t.Errorf("Env[%s] = %q; want under %s", v, p.Env[v], cacheRoot)
		}
	}
	shared := []string{".cache", "go/pkg/mod", ".npm", ".cargo/registry"}
	for _, w := range shared {
		if slices.Contains(p.Writable, filepath.Join(home, w)) {
			t.Errorf("private caches: the host's ~/%s is writable: %v", w, p.Writable)
		}
	}
	if !slices.Contains(p.Writable, filepath.Dir(p.Env["GOCACHE"])) {
		t.Errorf("Writable %v lacks the workspace's cache directory", p.Writable)
	}
	if other := confine.DefaultPolicy(confine.ProfileWorkspace, root+"/a", home); other.Env["GOCACHE"] == p.Env["GOCACHE"] && other.Workspace != p.Workspace {
		t.Errorf("two workspaces share a cache: %s", p.Env["GOCACHE"])
	}
	p.ShareCaches(home)
	for _, w := range shared {
		if !slices.Contains(p.Writable, filepath.Join(home, w)) {
			t.Errorf("shared caches: Writable lacks ~/%s: %v", w, p.Writable)
		}
	}
	if len(p.Env) != 0 || slices.ContainsFunc(p.Writable, func(w string) bool { return strings.HasPrefix(w, cacheRoot) }) {
		t.Errorf("shared caches: Env %v, Writable %v; want no private cache", p.Env, p.Writable)
	}
	for _, d := range []string{".ssh", ".gnupg", ".aws", ".config/gcloud", ".kube", ".docker/config.json", ".netrc", ".git-credentials", ".bash_history", ".zsh_history"} {
		if !slices.Contains(p.DenyRead, filepath.Join(home, d)) {
			t.Errorf("DenyRead lacks ~/%s", d)
		}
	}
	ro := confine.DefaultPolicy(confine.ProfileReadOnly, sub, home)
	if len(ro.Writable) != 0 || ro.ProtectGit {
		t.Errorf("read-only: Writable = %v, ProtectGit %v; want none, false", ro.Writable, ro.ProtectGit)
	}
	if nogit := confine.DefaultPolicy(confine.ProfileWorkspace, "/", home); nogit.Workspace != "/" {
		t.Errorf("without a repository Workspace = %s; want the directory", nogit.Workspace)
	}
}

// TestArgv: a valid policy wraps the program, an invalid one is refused,
// and off leaves the program bare.
func TestArgv(t *testing.T) {
	prefix := []string{"/usr/bin/runbox", confine.Command}
	ok := confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "/w"}
	cases := []struct {
		name    string
		p       confine.Policy
		prefix  []string
		want0   string
		wantErr bool
	}{
		{"workspace", ok, prefix, "/usr/bin/runbox", false},
		{"off", confine.Policy{Profile: confine.ProfileOff}, nil, "/bin/true", false},
		{"no-profile", confine.Policy{Workspace: "/w"}, prefix, "", true},
		{"unknown-profile", confine.Policy{Profile: "lax", Workspace: "/w"}, prefix, "", true},
		{"relative-workspace", confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "w"}, prefix, "", true},
		{"bad-network", confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "/w", Network: "some"}, prefix, "", true},
		{"bad-port", confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "/w", AllowPorts: []int{70000}}, prefix, "", true},
		{"no-trampoline", ok, nil, "", true},
		{"root-workspace", confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "/"}, prefix, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := confine.Argv(c.prefix, c.p, "/bin/true", []string{"true", "x"})
			if (err != nil) != c.wantErr {
				t.Fatalf("Argv err = %v; wantErr %v", err, c.wantErr)
			}
			if err == nil && (got[0] != c.want0 || got[len(got)-1] != "x") {
				t.Errorf("Argv = %q; want it to start with %s and end with x", got, c.want0)
			}
		})
	}
}

// TestProbe_ThisKernel: this machine (Landlock ABI >= 6, seccomp, root)
// gives every layer, and Check accepts every profile.
func TestProbe_ThisKernel(t *testing.T) {
	r := confine.Probe()
	if r.LandlockABI < 6 {
		integration.Skip(t, "Landlock ABI %d; this test wants 6 or later", r.LandlockABI)
	}
	for _, n := range []string{confine.LayerFiles, confine.LayerProcesses, confine.LayerPtrace, confine.LayerSignals, confine.LayerNetwork, confine.LayerOwnServers} {
		if l := r.Layer(n); l.State != confine.Active {
			t.Errorf("layer %s = %s (%s); want active", n, l.State, l.Reason)
		}
	}
	if os.Geteuid() == 0 && r.Layer(confine.LayerMountNS).State != confine.Active {
		t.Errorf("mount namespace not active as root")
	}
	for _, prof := range []string{confine.ProfileWorkspace, confine.ProfileReadOnly, confine.ProfileOff} {
		if err := r.Check(confine.DefaultPolicy(prof, t.TempDir(), "/home/u")); err != nil {
			t.Errorf("Check(%s) = %v", prof, err)
		}
	}
}

// TestReport_CheckRefuses: a kernel without Landlock refuses every
// confining profile with a message naming the way out, and off passes.
func TestReport_CheckRefuses(t *testing.T) {
	none := confine.Report{Layers: []confine.Layer{{Name: confine.LayerFiles, State: confine.Unsupported, Reason: "no Landlock"}}}
	p := confine.DefaultPolicy(confine.ProfileWorkspace, "/w", "/home/u")
	err := none.Check(p)
	if err == nil || !errors.Is(err, envs.ErrUnsupported) || !strings.Contains(err.Error(), "sandbox: off") || !strings.Contains(err.Error(), "files") {
		t.Errorf("Check = %v; want ErrUnsupported naming files and sandbox: off", err)
	}
	if err := none.Check(confine.Policy{Profile: confine.ProfileOff}); err != nil {
		t.Errorf("Check(off) = %v", err)
	}
	old := confine.Report{LandlockABI: 3, Layers: []confine.Layer{
		{Name: confine.LayerFiles, State: confine.Active}, {Name: confine.LayerProcesses, State: confine.Active},
		{Name: confine.LayerPtrace, State: confine.Active}, {Name: confine.LayerNetwork, State: confine.Degraded},
	}}
	if err := old.Check(p); err == nil || !strings.Contains(err.Error(), "allowlist") {
		t.Errorf("ABI 3 with allowlist: Check = %v; want a refusal naming the allowlist", err)
	}
	p.Network = confine.NetworkOff
	if err := old.Check(p); err != nil {
		t.Errorf("ABI 3 with network off: Check = %v", err)
	}
}

// TestReadOnly_WritesOnlyTmp: under read-only the workspace is not
// writable but TMPDIR is.
func TestReadOnly_WritesOnlyTmp(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		p := f.policy(confine.ProfileReadOnly)
		out, _ := f.run(t, p, `echo t > "$TMPDIR/x" && echo TMP-OK; echo w > new-file && echo WS-WROTE; cat README`)
		if !strings.Contains(out, "TMP-OK") || strings.Contains(out, "WS-WROTE") || !strings.Contains(out, "project") {
			t.Fatalf("read-only: want TMPDIR written, workspace not, README read:\n%s", out)
		}
		vs := confine.Explain(p, out)
		if len(vs) != 1 || vs[0].Op != "write" || vs[0].Rule != "read-only profile" {
			t.Errorf("Explain = %v; want one write under the read-only profile", vs)
		}
	})
}

// TestDenyInsideWritable: a denied path inside the workspace is neither
// readable nor writable, while what existed beside it at the start stays
// readable and writable; a denied path created after the start stays
// unreadable.
func TestDenyInsideWritable(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		secretDir := filepath.Join(f.ws, "secrets")
		if err := os.MkdirAll(secretDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(secretDir, "key"), []byte("INNER-SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(f.ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if u.cred != nil {
			chownTree(t, f.ws, int(u.cred.Uid), int(u.cred.Gid))
		}
		p := f.policy(confine.ProfileWorkspace)
		p.DenyRead = append(p.DenyRead, secretDir, filepath.Join(f.ws, "later"))
		script := `cat secrets/key; echo x > secrets/new && echo SECRET-WROTE
echo sub-ok > sub/f && cat sub/f README
mkdir later; echo LATER-SECRET > later/k; cat later/k`
		out, _ := f.run(t, p, script)
		for _, bad := range []string{"INNER-SECRET", "SECRET-WROTE", "LATER-SECRET"} {
			if strings.Contains(out, bad) {
				t.Errorf("output has %s:\n%s", bad, out)
			}
		}
		if !strings.Contains(out, "sub-ok\nproject\n") {
			t.Errorf("the rest of the workspace is not writable:\n%s", out)
		}
		if vs := confine.Explain(p, out); !hasViolation(vs, "read", filepath.Join(secretDir, "key")) {
			t.Errorf("Explain = %v; want the read of secrets/key", vs)
		}
	})
}

// TestWritableInsideDenied: a writable directory inside a denied one (a
// session's TMPDIR among the other sessions') is writable, while its
// siblings stay unreadable.
func TestWritableInsideDenied(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		f := newFixture(t, u)
		parent := filepath.Join(f.base, "sessions")
		mine, other := filepath.Join(parent, "mine"), filepath.Join(parent, "other")
		for _, d := range []string{mine, other} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(other, "f"), []byte("OTHER-SESSION"), 0o644); err != nil {
			t.Fatal(err)
		}
		if u.cred != nil {
			chownTree(t, parent, int(u.cred.Uid), int(u.cred.Gid))
		}
		p := f.policy(confine.ProfileWorkspace)
		p.DenyRead = append(p.DenyRead, parent)
		p.Writable = append(p.Writable, mine)
		out, _ := f.run(t, p, `echo mine-ok > "$MINE/f" && cat "$MINE/f"; cat "$OTHER/f"`, "MINE="+mine, "OTHER="+other)
		if !strings.Contains(out, "mine-ok") || strings.Contains(out, "OTHER-SESSION") {
			t.Fatalf("want own directory written and the other unreadable:\n%s", out)
		}
		vs := confine.Explain(p, out)
		if len(vs) != 1 || !hasViolation(vs, "read", filepath.Join(other, "f")) {
			t.Errorf("Explain = %v; want only the read of the other session", vs)
		}
	})
}

// TestDenyInsideWritable_NotRemovedNorReplaced protects the deny list of a
// workspace that holds it (the workspace is HOME): a denied file cannot
// be removed, a file cannot be moved or linked in beside it, a denied
// directory cannot be renamed away and made again, and a missing denied
// directory cannot be made. The control runs the same script unconfined.
func TestDenyInsideWritable_NotRemovedNorReplaced(t *testing.T) {
	forUsers(t, func(t *testing.T, u user) {
		attacks := []struct{ name, script string }{
			{"remove a key", `rm -f .ssh/id_ed25519`},
			{"move a key in", `echo evil > .cache/ak && mv .cache/ak .ssh/authorized_keys`},
			{"link a key in", `echo evil > .cache/ak && ln -s "$PWD/.cache/ak" .ssh/authorized_keys`},
			{"rename the directory away", `mv .ssh .ssh-old`},
			{"make a missing denied directory", `mkdir .kube && echo evil > .kube/config`},
		}
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				f := newFixture(t, u)
				os.RemoveAll(filepath.Join(f.home, ".kube"))
				changed := func() bool {
					b, err := os.ReadFile(f.secret)
					_, ak := os.Lstat(filepath.Join(f.home, ".ssh", "authorized_keys"))
					_, kube := os.Lstat(filepath.Join(f.home, ".kube"))
					return err != nil || string(b) != secretText || ak == nil || kube == nil
				}
				run := func(p confine.Policy) {
					cmd := exec.Command("/bin/bash", "-c", a.script)
					cmd.Dir = f.home
					var out strings.Builder
					cmd.Stdout, cmd.Stderr = &out, &out
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.u.cred}
					argv, err := confine.Argv([]string{f.exe, confine.Command}, p, cmd.Path, cmd.Args)
					if err != nil {
						t.Fatal(err)
					}
					if p.Profile != confine.ProfileOff {
						cmd.Path, cmd.Args = argv[0], argv
					}
					cmd.Run()
				}
				run(*confine.Off())
				if !changed() {
					t.Fatalf("control: unconfined, %q changed nothing", a.script)
				}
				f = newFixture(t, u)
				os.RemoveAll(filepath.Join(f.home, ".kube"))
				p := confine.DefaultPolicy(confine.ProfileWorkspace, f.home, f.home)
				p.Workspace = f.home
				run(p)
				if changed() {
					t.Errorf("under workspace at HOME, %q changed the deny list", a.script)
				}
			})
		}
	})
}
