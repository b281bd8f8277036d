//go:build linux

package confine_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/runbox/runbox/confine"
)

// BenchmarkTrue compares `true` started directly with `true` started
// through the trampoline under the workspace profile (the trampoline's
// whole cost: a Go program's start, the rules, execve).
func BenchmarkTrue(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	p := confine.DefaultPolicy(confine.ProfileWorkspace, ws, os.Getenv("HOME"))
	confined, err := confine.Argv([]string{exe, confine.Command}, p, "/bin/true", []string{"true"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{{"bare", []string{"/bin/true"}}, {"sandboxed", confined}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(c.argv[0], c.argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
