package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// TestSession_PlantedFilesReadNothing: a command may write the session's
// state directory, where runbox reads back the directory and the state
// the shell saved. A command that, after the save, puts a link to a
// secret in place of either file, or /dev/zero, or a fifo, gets neither
// the secret (in its result's cwd, or restored into the next command),
// nor an endless read, nor a wait: runbox reads each only as the regular
// file it wrote. The control: the links were made, and the secret is
// readable to this process.
func TestSession_PlantedFilesReadNothing(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("export LEAKED=canary-7f3e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]Options{
		"Warm":     {Confine: confine.Off()},
		"Cold":     {Confine: confine.Off(), NoPrestart: true},
		"Confined": {},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Grace, opts.Dir = 300*time.Millisecond, t.TempDir()
			e, err := New(opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { e.Close(context.Background()) })
			marker := filepath.Join(opts.Dir, "planted")
			run := func(c string) *envs.Result {
				t.Helper()
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res, err := e.Run(ctx, envs.Command{Shell: c})
				if err != nil {
					t.Fatalf("Run(%q): %v", c, err)
				}
				return res
			}
			for _, plant := range []string{
				`ln -s ` + secret + ` "$t"`,
				`ln -s /dev/zero "$t"`,
				`mkfifo "$t"`,
			} {
				for _, file := range []string{"__rb_cwdf", "__rb_out"} {
					os.Remove(marker)
					res := run(`t=$` + file + `; trap '__rb_save; rm -f "$t"; ` + plant + ` && : > ` + marker + `' EXIT; X=1`)
					if _, err := os.Stat(marker); err != nil {
						t.Fatalf("%s over %s: the command did not plant it (%v)", plant, file, err)
					}
					if strings.Contains(res.Cwd, "canary") || strings.Contains(res.Output, "canary") {
						t.Errorf("%s over %s: the result carries the secret: %+v", plant, file, res)
					}
					if got := run(`echo "[$LEAKED]"`).Output; got != "[]\n" {
						t.Errorf("%s over %s: the next command restored the secret: %q", plant, file, got)
					}
				}
			}
		})
	}
}
