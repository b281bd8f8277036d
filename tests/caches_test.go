package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// TestSandbox_CachesCannotPoisonTheHost: a command, with the gate out of
// the way, makes a module in the host's Go module cache writable and adds
// a panic to it; the host's next go run of a program that imports it is
// what the attack aims at. Under --sandbox off (the control) the host's
// build panics; under the default profile the cache is not the
// command's to write, the host's build is unchanged, and the command's
// own go run still works, taking the module from the host's download
// cache into the workspace's own caches. Under sandbox.caches: shared
// the attack works again, as documented.
func TestSandbox_CachesCannotPoisonTheHost(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	realCache := goEnv(t, "GOCACHE")
	u := users(t)[0] // the host's builds share this user's build cache
	home, ws, _ := sandboxDirs(t, u)
	modCache := filepath.Join(home, "go", "pkg", "mod")
	writeOwned(t, u, filepath.Join(ws, "go.mod"), "module example.com/victim\n\ngo 1.26\n\nrequire github.com/google/uuid v1.6.0\n", 0o644)
	writeOwned(t, u, filepath.Join(ws, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/uuid\"\n)\n\nfunc main() { fmt.Println(\"len\", len(uuid.NewString())) }\n", 0o644)
	// The host's go, with the test's module cache, filled from the
	// machine's (no network needed where it already has the module).
	hostGo := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modCache, "GOCACHE="+realCache, "GOFLAGS=-mod=mod",
			"GOPROXY=file://"+filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")+","+goEnv(t, "GOPROXY"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := hostGo("mod", "tidy"); err != nil {
		integration.Skip(t, "the uuid module is not reachable: %v: %s", err, out)
	}
	if out, err := hostGo("run", "."); err != nil || !strings.Contains(out, "len 36") {
		t.Fatalf("host go run before: %v: %s", err, out)
	}
	pkg := filepath.Join(modCache, "github.com", "google", "uuid@v1.6.0")
	clean, err := os.ReadFile(filepath.Join(pkg, "uuid.go"))
	if err != nil {
		t.Fatal(err)
	}
	// The module cache is read-only to its own user too: the test
	// removes it.
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", modCache).Run() })
	writeOwned(t, u, filepath.Join(ws, "poison.sh"), "chmod -R u+w "+pkg+" && printf '\\nfunc init() { panic(\"poisoned\") }\\n' >> "+pkg+"/uuid.go\n", 0o755)
	cfg := filepath.Join(filepath.Dir(home), "shared.yaml")
	writeOwned(t, u, cfg, "sandbox:\n  caches: shared\n", 0o644)
	state := filepath.Join(home, "state")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"workspace", []string{"--yolo", "run", "--cwd", ws, "--", "bash ./poison.sh"}},
		{"workspace: the command's own go run", []string{"--yolo", "run", "--cwd", ws, "--", "go run ."}},
		{"off", []string{"--yolo", "--sandbox", "off", "run", "--cwd", ws, "--", "bash ./poison.sh"}},
		{"shared caches", []string{"--yolo", "--config", cfg, "run", "--cwd", ws, "--", "bash ./poison.sh"}},
	} {
		out, errOut, code := u.run(t, []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state, "PATH=" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin"}, c.args...)
		host, herr := hostGo("run", ".")
		poisoned := strings.Contains(host, "poisoned")
		switch c.name {
		case "workspace":
			if code == 0 || poisoned {
				t.Errorf("%s: the command could write the host's module cache: exit %d, %s %s; host: %s", c.name, code, out, errOut, host)
			}
		case "workspace: the command's own go run":
			if code != 0 || !strings.Contains(out, "len 36") {
				t.Errorf("%s: exit %d, %q %q; want it to build from the host's download cache", c.name, code, out, errOut)
			}
		default:
			if !poisoned {
				t.Errorf("%s (control): the host's build was not poisoned: %v %s; command: %d %s", c.name, herr, host, code, errOut)
			}
			os.WriteFile(filepath.Join(pkg, "uuid.go"), clean, 0o644)
		}
	}
}

// goEnv is one of the machine's go env values.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
