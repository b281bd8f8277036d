package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// A state directory made by another user — named by RUNBOX_STATE_DIR,
// or XDG_STATE_HOME/runbox — is refused before runbox writes anything
// (its daemon's log included) or starts a daemon there: start exits
// non-zero and says which directory and why, and a file of the user's
// linked from it is untouched. Breaks if runbox trusts the directory.
func TestJobs_CLIRefusesHostileStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		integration.Skip(t, "giving a directory to another user (chown) needs root")
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	const nobody = 65534
	tests := []struct {
		name string
		env  func(base string) map[string]string
	}{
		{"RUNBOX_STATE_DIR", func(base string) map[string]string {
			return map[string]string{"RUNBOX_STATE_DIR": filepath.Join(base, "runbox")}
		}},
		{"XDG_STATE_HOME", func(base string) map[string]string {
			return map[string]string{"XDG_STATE_HOME": base}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			state := filepath.Join(base, "runbox")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("SECRET\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// The attacker's directory, with the daemon's log planted as
			// a link to the victim's file.
			if err := os.Symlink(victim, filepath.Join(state, "daemon.log")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(state, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			env := tc.env(base)
			env["RUNBOX_OWNER"] = "tester"
			out, errs, code := jcli(t, env, "start", "--", "echo hi")
			if code != exitRunbox || out != "" {
				t.Fatalf("start in another user's state dir: exit %d, stdout %q; want a refusal (exit %d)", code, out, exitRunbox)
			}
			want := "state directory " + state + " is owned by uid 65534, not you (uid 0); refusing it"
			if !strings.Contains(errs, want) {
				t.Errorf("stderr %q; want it to say %q", errs, want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "SECRET\n" {
				t.Errorf("victim file now holds %q", b)
			}
			ents, _ := os.ReadDir(state)
			if len(ents) != 1 {
				t.Errorf("runbox wrote into the refused directory: %v", ents)
			}
		})
	}
}
