//go:build linux

package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
			gone, _, err := pp.Start(cmd.Start, nil)
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

// BenchmarkMetadata measures what deciding metadata calls costs a command
// run by a user (no read-only mount layer: each call goes to the
// listener, which makes it), unconfined and under the workspace profile.
// Each iteration runs a Python that makes 1000 chmods of a file in the
// workspace and one that makes none; metric chmod-ns is the difference
// per call, so the start of Python and of the sandbox are left out. The
// sandbox is made, and its listener served, by a process of the same user
// (as `runbox run` by that user): "root-listener" is the listener in a
// root process, which takes the user's identity on a thread of its own
// for each call.
func BenchmarkMetadata(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root to run the command as nobody")
	}
	const calls = 1000
	script := func(n int) string {
		return `python3 -c 'import os
for i in range(` + strconv.Itoa(n) + `):
    os.chmod("README", 0o600 if i % 2 else 0o644)'`
	}
	for _, c := range []struct {
		name, profile string
		thread        bool
	}{
		{"off", confine.ProfileOff, true},
		{"workspace", confine.ProfileWorkspace, true},
		{"root-listener", confine.ProfileWorkspace, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b, users[1])
			f.thread = c.thread
			p := f.policy(c.profile)
			var calling time.Duration
			for b.Loop() {
				for _, n := range []int{0, calls} {
					start := time.Now()
					if out, code := f.run(b, p, script(n)); code != 0 {
						b.Fatalf("exit %d: %s", code, out)
					}
					if n == 0 {
						calling -= time.Since(start)
					} else {
						calling += time.Since(start)
					}
				}
			}
			b.ReportMetric(float64(calling.Nanoseconds())/float64(b.N*calls), "chmod-ns")
		})
	}
}
