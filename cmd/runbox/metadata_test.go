package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
)

// TestRun_MetadataAsUser: `runbox run` as shipped, by a user who is not
// root (so without the read-only mount layer), with default flags: chmod,
// touch -d and chown of the user's own file outside the workspace fail and
// are reported as violations naming it; the same script with --sandbox off
// changes the file (the control); inside the workspace they work.
func TestRun_MetadataAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "needs root to run runbox as nobody")
	}
	const nobody = 65534
	base, err := os.MkdirTemp("", "runbox-meta-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "runbox")
	testproc.CopyFile(t, os.Args[0], bin)
	home, ws, outside := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "outside")
	victim := filepath.Join(outside, "victim")
	for _, d := range []string{home, ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, nobody, nobody)
	}
	run := func(args ...string) (violations []struct{ Op, Target string }, stderr string) {
		t.Helper()
		if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(victim, 0o644) // the control left it changed
		os.Chown(victim, nobody, nobody)
		os.Chtimes(victim, time.Now(), time.Now())
		// --yolo: the gate is out of the way; the sandbox is what is tested.
		cmd := exec.Command(bin, append([]string{"--yolo", "run", "--json"}, args...)...)
		cmd.Dir = ws
		cmd.Env = []string{runMainEnv + "=1", "HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME=", "RUNBOX_CONFIG="}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var errb strings.Builder
		cmd.Stderr = &errb
		out, _ := cmd.Output()
		var res struct {
			Sandbox    string                        `json:"sandbox"`
			Violations []struct{ Op, Target string } `json:"sandbox_violations"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("runbox run %q: %v\nstdout %s\nstderr %s", args, err, out, errb.String())
		}
		return res.Violations, errb.String()
	}
	script := `chmod 600 "` + victim + `"; touch -d "2000-01-02 03:04:05" "` + victim + `"; chown 65534:65534 "` + victim + `"; ` +
		`echo in > mine && chmod 600 mine && touch -d "2000-01-02 03:04:05" mine`
	changed := func() bool {
		fi, err := os.Stat(victim)
		return err == nil && (fi.Mode().Perm() != 0o644 || fi.ModTime().Year() == 2000)
	}

	if _, stderr := run("--sandbox", "off", "--", script); !changed() {
		t.Fatalf("control: unconfined, the script did not change the file outside: the test proves nothing\n%s", stderr)
	}
	violations, stderr := run("--", script)
	if changed() {
		t.Errorf("confined by default, the script changed the metadata of %s outside the workspace", victim)
	}
	seen := map[string]bool{}
	for _, v := range violations {
		if v.Target == victim {
			seen[v.Op] = true
		}
	}
	for _, op := range []string{"chmod", "utimes", "chown"} {
		if !seen[op] {
			t.Errorf("no %s violation naming %s in %+v\n%s", op, victim, violations, stderr)
		}
	}
	fi, err := os.Stat(filepath.Join(ws, "mine"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Year() != 2000 {
		t.Errorf("inside the workspace chmod and touch -d did not work: %v %v", fi, err)
	}
}
