package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/procregistry"
)

func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// scanScript prints, for every process whose command line names the
// runbox binary, its PID, its environ (or UNREADABLE) and its cmdline,
// NULs made visible. It never names a secret itself.
func scanScript(bin string) string {
	return fmt.Sprintf(`for d in /proc/[0-9]*; do
  c=$(tr '\0' ' ' < $d/cmdline 2>/dev/null) || continue
  case "$c" in *%s*) ;; *) continue ;; esac
  echo "== ${d#/proc/} CMDLINE $c"
  if e=$(tr '\0' '\n' < $d/environ 2>/dev/null); then echo "ENVIRON-READABLE"; echo "$e"; else echo "ENVIRON-UNREADABLE"; fi
done`, bin)
}

// TestSecrets_NotReadableFromAnyRunboxProcess protects the promise that a
// command cannot read a withheld secret from runbox itself: not from the
// CLI that runs it (/proc/$PPID), the job daemon, a job's supervisor or a
// concurrent `runbox wait`, neither from their environ nor from their
// cmdline, and not even when the caller's shell expanded the secret into
// the command text. It runs as root and as an unprivileged user.
func TestSecrets_NotReadableFromAnyRunboxProcess(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			secrets := map[string]string{
				"MODAL_TOKEN_SECRET": randomSecret(t, "as-"),
				"DAYTONA_API_KEY":    randomSecret(t, "dtn_"),
				"SUDO_PASSWORD":      randomSecret(t, "pw-"),
				"OPENAI_API_KEY":     randomSecret(t, "sk-"),
				"GITHUB_TOKEN":       randomSecret(t, "ghp_"),
			}
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + home + "/state", "RUNBOX_OWNER=sec", "RUNBOX_SCAN_MARK=plain-value"}
			for k, v := range secrets {
				env = append(env, k+"="+v)
			}
			state := home + "/state"
			t.Cleanup(func() { stopDaemon(state) })

			out, errOut, code := u.run(t, env, "start", "--", "sleep 60")
			if code != 0 {
				t.Fatalf("start: exit %d: %s", code, errOut)
			}
			id := strings.TrimSpace(out)
			t.Cleanup(func() { u.run(t, env, "kill", id) })

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			waiter := u.command(ctx, env, "wait", "--timeout", "50s", id)
			if err := waiter.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cancel(); waiter.Wait() })

			// The caller's shell expanded $GITHUB_TOKEN into the text.
			cmd := ": " + secrets["GITHUB_TOKEN"] + "\n" + scanScript(runboxBin)
			// Unconfined: the sandbox would stop the scan itself (see
			// TestSandbox_HoldsWhatTheGateLetsThrough); this test is
			// about what runbox's processes hold.
			out, errOut, code = u.run(t, env, "--sandbox", "off", "run", "--yolo", "--", cmd)
			if code != 0 {
				t.Fatalf("run: exit %d: %s", code, errOut)
			}
			for name, v := range secrets {
				if strings.Contains(out, v) {
					t.Errorf("%s's value is readable from a runbox process:\n%s", name, excerpt(out, v))
				}
			}
			procs := strings.Count(out, "== ")
			// run itself, wait, the daemon and the job's supervisor at least.
			if procs < 4 {
				t.Errorf("saw %d runbox processes, want at least 4:\n%s", procs, out)
			}
			if u.uid == 0 && !strings.Contains(out, "RUNBOX_SCAN_MARK=plain-value") {
				t.Errorf("as root the scan read no runbox environ at all; the test proves nothing:\n%s", out)
			}
		})
	}
}

func excerpt(s, v string) string {
	i := strings.Index(s, v)
	lo, hi := max(0, i-200), min(len(s), i+len(v)+50)
	return strings.ReplaceAll(s[lo:hi], v, "<SECRET>")
}

// stopDaemon stops the job daemon of a state directory, if one answers.
func stopDaemon(state string) {
	c := &procregistry.Client{Path: state + "/run/daemon.sock"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pid, err := c.Ping(ctx)
	if err != nil || pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		p.Signal(os.Interrupt)
	}
}

// TestSecrets_JobRecordRedacted protects the promise that a secret the
// caller's shell expanded into a background job's command is shown and
// stored redacted — in ps, in job.json — while the job runs the real
// command, and that an --env value equal to a withheld one is warned about.
func TestSecrets_JobRecordRedacted(t *testing.T) {
	u := users(t)[0]
	home := u.home(t)
	token := randomSecret(t, "ghp_")
	state := home + "/state"
	env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state, "RUNBOX_OWNER=sec", "GITHUB_TOKEN=" + token}
	t.Cleanup(func() { stopDaemon(state) })
	out, errOut, code := u.run(t, env, "start", "--env", "MY_TOKEN="+token, "--", "echo got-"+token+"-end")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if !strings.Contains(errOut, "[GITHUB_TOKEN]") || !strings.Contains(errOut, "--env MY_TOKEN has the value of GITHUB_TOKEN") {
		t.Errorf("start did not say what it redacted and warned about: %q", errOut)
	}
	if _, errOut, code := u.run(t, env, "wait", "--timeout", "30s", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, errOut)
	}
	logs, _, _ := u.run(t, env, "logs", "--offset", "0", id)
	if strings.TrimSpace(logs) != "got-"+token+"-end" {
		t.Errorf("the job did not run the real command: output %q", logs)
	}
	ps, _, _ := u.run(t, env, "ps", "--all", "--json")
	if strings.Contains(ps, token) || !strings.Contains(ps, "echo got-[GITHUB_TOKEN]-end") {
		t.Errorf("ps shows %s; want the command redacted", excerpt(ps, token))
	}
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "output.log") || strings.HasSuffix(p, ".sock") {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), token) {
			t.Errorf("%s stores the secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
