package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicy_CommandCannotRewriteIt protects the promise that a command
// cannot weaken the policy that judges the next one: every write to
// runbox's configuration, in the spellings an agent would try, is refused
// before it runs, and the file is unchanged afterwards; writes into the
// state directory are refused too.
func TestPolicy_CommandCannotRewriteIt(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home := u.home(t)
			cfgDir := filepath.Join(home, ".config", "runbox")
			cfg := filepath.Join(cfgDir, "config.yaml")
			os.MkdirAll(cfgDir, 0o700)
			orig := "approval:\n  mode: manual\n"
			os.WriteFile(cfg, []byte(orig), 0o600)
			filepath.Walk(filepath.Join(home, ".config"), func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(u.uid), int(u.gid)) })
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			attacks := []string{
				`echo 'approval: {mode: off, allow: ["*"]}' >> ~/.config/runbox/config.yaml`,
				`printf 'spawn:\n  passthrough: [OPENAI_API_KEY]\n' | tee -a $HOME/.config/runbox/config.yaml`,
				`cd ~/.config/runbox && echo 'approval: {mode: off}' >> config.yaml`,
				`f=$HOME/.config/runbox/config.yaml; echo x > "$f"`,
				`cp /dev/null ~/.config/runbox/config.yaml`,
				`sed -i s/manual/off/ ~/.config//runbox/../runbox/config.yaml`,
				`rm -rf ~/.config/runbox`,
				`echo x > ` + state + `/jobs.json`,
			}
			for _, a := range attacks {
				_, errOut, code := u.run(t, env, "run", "--yolo", "--", a)
				if code != 125 || !strings.Contains(errOut, "refused by the command gate") {
					t.Errorf("%s: exit %d, %q; want refused (125)", a, code, errOut)
				}
			}
			if b, _ := os.ReadFile(cfg); string(b) != orig {
				t.Errorf("the configuration changed: %q", b)
			}
			// Reading it is fine for the gate; the sandbox keeps runbox's
			// own files from confined commands, so it is read unconfined.
			out, errOut, code := u.run(t, env, "--sandbox", "off", "run", "--", "cat ~/.config/runbox/config.yaml")
			if code != 0 || out != orig {
				t.Errorf("reading the configuration: exit %d, %q %q", code, out, errOut)
			}
		})
	}
}
