package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandbox_JournalNamesConfirmNoGuess protects the promise that a
// confined command learns nothing of a file on the deny list through
// runbox's change journal. runbox keeps, unconfined, a copy of every file
// of the workspace for undo, in its state directory, whose names a
// confined command can list (Landlock lets the steps toward a denied
// directory be listed, and what lies below them with it). Named by the
// SHA-256 of their content, the copies let the command confirm a guess at
// a deny-listed .env by hashing the guess. As root and as an unprivileged
// user, through the binary with --changes; the control: the same user's
// unconfined shell reads the file, and hashes of the guess are what a
// plain-hash store would show.
func TestSandbox_JournalNamesConfirmNoGuess(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, _ := sandboxDirs(t, u)
			secret := "DB_PASSWORD=canary-" + u.name + "\n"
			writeOwned(t, u, filepath.Join(ws, "secret.env"), secret, 0o600)
			mkdirOwned(t, u, filepath.Join(home, ".config"))
			mkdirOwned(t, u, filepath.Join(home, ".config", "runbox"))
			writeOwned(t, u, filepath.Join(home, ".config", "runbox", "config.yaml"),
				"sandbox:\n  deny_read: ["+filepath.Join(ws, "secret.env")+"]\n", 0o600)
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			run := yoloRunner(t, u, env, ws)
			if got := run("--sandbox", "off", "run", "--", "cat secret.env"); !strings.Contains(got, "canary") {
				t.Fatalf("the control read %q: the file is not there to guess", got)
			}
			run("run", "--changes", "--", "true") // the journal keeps a copy of secret.env
			sum := sha256.Sum256([]byte(secret))
			guess := hex.EncodeToString(sum[:])
			got := run("run", "--", "cat secret.env; ls -R "+state+"/undo; echo listed")
			if !strings.Contains(got, "listed") || !strings.Contains(got, "objects") {
				t.Fatalf("the confined listing of the journal showed %q: the attack did not run", got)
			}
			if strings.Contains(got, "canary") {
				t.Errorf("the confined command read the deny-listed file: %s", got)
			}
			if strings.Contains(got, guess) {
				t.Errorf("the journal names secret.env's copy by the SHA-256 of its content: a guess is confirmed (%s)", got)
			}
		})
	}
}
