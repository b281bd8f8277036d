package procregistry

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/termination"
)

// readsStdin tells a process blocked reading its stdin from one that
// merely holds it (sleep), through /proc/PID/syscall and through the
// wchan fallback alike, and does not take a read of another pipe for a
// read of stdin. Each case is judged once the child's whole tree sleeps
// (state S), so a process that has not reached its read yet is not
// mistaken for one that never will.
func TestReadsStdin_Methods(t *testing.T) {
	cases := []struct {
		name, shell string
		procs       int // processes of the settled tree
		want        bool
	}{
		{"read", `read x`, 1, true},
		{"sleep", `exec sleep 60`, 1, false},
		{"read-other-pipe", `sleep 60 | read x`, 3, false},
	}
	for _, how := range []struct {
		name string
		m    probeMethod
	}{{"syscall", probeSyscall}, {"wchan", probeWchan}} {
		for _, tc := range cases {
			t.Run(how.name+"/"+tc.name, func(t *testing.T) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				cmd := exec.Command("/bin/sh", "-c", tc.shell)
				cmd.Stdin = r
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				r.Close()
				t.Cleanup(func() {
					if ds, err := termination.Descendants(cmd.Process.Pid); err == nil {
						for _, d := range ds {
							d.Signal(9)
						}
					}
					cmd.Process.Kill()
					cmd.Wait()
				})
				root := cmd.Process.Pid
				stdin, ok := statID("/proc/" + strconv.Itoa(root) + "/fd/0")
				if !ok {
					t.Fatal("cannot stat the child's stdin")
				}
				var tree []int
				testwait.Within(t, 10*time.Second, "the child's tree to settle", func() bool {
					tree = settledTree(root, tc.procs)
					return tree != nil
				})
				got := false
				for _, pid := range tree {
					got = got || readsStdin(pid, stdin, how.m)
				}
				if got != tc.want {
					t.Errorf("%q on the job's stdin pipe: blocked reading it = %v; want %v", tc.shell, got, tc.want)
				}
			})
		}
	}
}

// settledTree returns root and its descendants when there are at least
// n of them and all sleep (state S); nil otherwise.
func settledTree(root, n int) []int {
	ds, err := termination.Descendants(root)
	if err != nil {
		return nil
	}
	pids := []int{root}
	for _, d := range ds {
		pids = append(pids, d.PID)
	}
	if len(pids) < n {
		return nil
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'S' {
			return nil
		}
	}
	return pids
}
