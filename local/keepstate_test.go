package local

import (
	"context"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// TestSession_UnchangingCommandKeepsState: a command that cannot change
// the session's state (shellstate.Unchanging) leaves the adopted state
// file as it was, while the session still carries what commands before
// and after it changed, on pre-started and cold shells, with bash and sh;
// and once the session defines a function or an alias, a command whose
// name is one of them saves, so what it exports is kept.
func TestSession_UnchangingCommandKeepsState(t *testing.T) {
	dir := t.TempDir()
	for name, opts := range map[string]Options{
		"Warm":     {},
		"Cold":     {NoPrestart: true},
		"Sh":       {Shell: "/bin/sh"},
		"Confined": {Confine: nil},
	} {
		t.Run(name, func(t *testing.T) {
			if opts.Confine == nil && name != "Confined" {
				opts.Confine = confine.Off()
			}
			opts.Grace, opts.Dir = 300*time.Millisecond, "/"
			e, err := New(opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { e.Close(context.Background()) })
			runIn := func(c string) string {
				t.Helper()
				res, err := e.Run(t.Context(), envs.Command{Shell: c})
				if err != nil || res.Code != 0 {
					t.Fatalf("Run(%q): %v %+v", c, err, res)
				}
				return res.Output
			}
			stateFile := func() string {
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.state
			}
			runIn("export A=1; cd " + dir)
			saved := stateFile()
			for _, c := range []string{"true", "ls >/dev/null", "echo $(cd /; export A=2)"} {
				runIn(c)
				if got := stateFile(); got != saved {
					t.Fatalf("%q saved the state (%s, was %s)", c, got, saved)
				}
			}
			// Where it ran is its result's directory; one of its own
			// does not move the session.
			for _, c := range []envs.Command{{Shell: "true"}, {Shell: "true", Dir: "/tmp"}} {
				res, err := e.Run(t.Context(), c)
				if want := map[bool]string{true: "/tmp", false: dir}[c.Dir != ""]; err != nil || res.Cwd != want {
					t.Fatalf("Run(%+v): cwd %q (%v), want %q", c, res.Cwd, err, want)
				}
			}
			if got, want := runIn("echo $A; pwd"), "1\n"+dir+"\n"; got != want {
				t.Fatalf("after unchanging commands: %q, want %q", got, want)
			}
			if name == "Sh" {
				return // sh carries exports and the directory only
			}
			runIn("ls() { export B=2; }; alias ll='export C=3'")
			runIn("ls")
			runIn("ll")
			if got, want := runIn("echo $B$C"), "23\n"; got != want {
				t.Fatalf("a function and an alias of the session exported %q, want %q", got, want)
			}
		})
	}
}
