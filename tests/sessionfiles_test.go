package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// yoloRunner runs the binary as u, with env, in dir, with the gate out of
// the way, and returns its combined output; every run of one test shares
// a bound that catches a hang.
func yoloRunner(t *testing.T, u user, env []string, dir string) func(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return func(args ...string) string {
		cmd := u.command(ctx, env, append([]string{"--yolo"}, args...)...)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
}

// TestSandbox_SessionFilesLeakNothing protects the promise that a
// confined command reads nothing on the deny list through runbox itself:
// runbox reads back, unconfined, the directory and the state a command's
// shell saves in the session's state directory, which the command
// writes. A command that puts a link to ~/.ssh/id_test in place of the
// directory's file gets neither the key in its result's cwd nor, through
// the state file, in the next command; with /dev/zero or a fifo there,
// runbox neither reads without end nor waits. As root and as an
// unprivileged user, with the gate out of the way. The control: the
// same user's unconfined cat reads the key.
func TestSandbox_SessionFilesLeakNothing(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, _ := sandboxDirs(t, u)
			mkdirOwned(t, u, filepath.Join(home, ".ssh"))
			key := filepath.Join(home, ".ssh", "id_test")
			writeOwned(t, u, key, "export LEAKED=key-canary-"+u.name+"\n", 0o600)
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + filepath.Join(home, "state")}
			run := yoloRunner(t, u, env, ws)
			if got := run("--sandbox", "off", "run", "--", "cat "+key); !strings.Contains(got, "key-canary") {
				t.Fatalf("the control read %q: the attack is not real here", got)
			}
			for _, plant := range []string{`ln -s ` + key + ` "$t"`, `ln -s /dev/zero "$t"`, `mkfifo "$t"`} {
				for _, file := range []string{"__rb_cwdf", "__rb_out"} {
					// One run is a session: the second command is the one
					// the planted state would be restored into.
					line := `t=$` + file + `; trap '__rb_save; rm -f "$t"; ` + plant + `' EXIT; X=1`
					got := run("run", "--json", "--", line)
					if strings.Contains(got, "key-canary") {
						t.Errorf("%s over %s: the result carries the key: %s", plant, file, got)
					}
					script := filepath.Join(ws, "two.sh")
					os.WriteFile(script, []byte(line+"\n"), 0o644)
					os.Lchown(script, int(u.uid), int(u.gid))
					if got := run("code", `import runbox; runbox.terminal(open("two.sh").read()); print(runbox.terminal('echo "[$LEAKED]"'))`); strings.Contains(got, "key-canary") || !strings.Contains(got, "[]") {
						t.Errorf("%s over %s: the next command of the session got the key: %s", plant, file, got)
					}
				}
			}
		})
	}
}
