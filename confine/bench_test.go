//go:build linux

package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	b.Run("prepared", func(b *testing.B) {
		pp, err := confine.Prepare(benchPolicy(b, ws))
		if err != nil {
			b.Fatal(err)
		}
		defer pp.Close()
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			gone, err := pp.Start(cmd.Start, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := gone(); err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchPolicy is the workspace policy as runbox gives it to a session:
// the documented lists for this user, and runbox's own files in the
// temporary directory denied, which makes it a directory whose entries
// are listed one by one.
func benchPolicy(b *testing.B, ws string) confine.Policy {
	p := confine.DefaultPolicy(confine.ProfileWorkspace, ws, os.Getenv("HOME"))
	uid := strconv.Itoa(os.Getuid())
	p.DenyRead = append(p.DenyRead, filepath.Join(os.TempDir(), "runbox-output-"+uid), filepath.Join(os.TempDir(), "runbox-tmp-"+uid))
	return p
}

// BenchmarkPrepared measures what a prepared sandbox costs a start that
// reuses it (Current: listing what the rules were built from) and one
// that prepares it anew.
func BenchmarkPrepared(b *testing.B) {
	p := benchPolicy(b, b.TempDir())
	b.Run("current", func(b *testing.B) {
		pp, err := confine.Prepare(p)
		if err != nil {
			b.Fatal(err)
		}
		defer pp.Close()
		for b.Loop() {
			if !pp.Current() {
				b.Fatal("not current")
			}
		}
	})
	b.Run("prepare", func(b *testing.B) {
		for b.Loop() {
			pp, err := confine.Prepare(p)
			if err != nil {
				b.Fatal(err)
			}
			pp.Close()
		}
	})
}
