package local_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/termination"
)

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, "" when none.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if fields := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(fields) >= 5 {
			return fields[4]
		}
	}
	return ""
}

// emptyRunboxGroups lists the empty cgroup2 groups this test process made
// for its commands (runbox-<pid>-*): the containers kept for the next
// shells, which someone else could remove.
func emptyRunboxGroups(t *testing.T, mount string) []string {
	t.Helper()
	prefix := fmt.Sprintf("runbox-%d-", os.Getpid())
	var dirs []string
	filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(strings.TrimPrefix(p, mount), "/") > 4 {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), prefix) {
			if procs, err := os.ReadFile(filepath.Join(p, "cgroup.procs")); err == nil && len(bytes.TrimSpace(procs)) == 0 {
				dirs = append(dirs, p)
			}
			return filepath.SkipDir
		}
		return nil
	})
	return dirs
}

// liveWithArg counts the live processes (not zombies) with arg as one
// of their arguments.
func liveWithArg(t *testing.T, arg string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A whole argument, not a substring: processes of other packages
		// tested at the same time carry random digits in temp paths and
		// ports, and a busy machine showed them counted here.
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if slices.ContainsFunc(bytes.Split(cmd, []byte{0}), func(a []byte) bool { return string(a) == arg }) && testproc.Alive(pid) {
			n++
		}
	}
	return n
}

// TestWarm_ContainerAlwaysThere protects the promise that every command
// runs in a container of its own, command after command, whatever became
// of the containers before: an empty container a command leaves is kept
// for the next shell, and a kept one that is no longer there must be
// replaced, not used. Two ways it goes: the command's leftovers were
// cleared (which removes the container), or someone removed the empty
// group behind runbox's back. Either used to leave the later shells
// outside any container, with a "cgroup.procs: no such file or directory"
// warning on every command and their leftovers running on. Each command
// here leaves a child behind, which must be killed and counted, with no
// warning; and a command that leaves nothing runs between them, so that
// there are kept containers to remove.
func TestWarm_ContainerAlwaysThere(t *testing.T) {
	d := termination.Detect(t.Context())
	mount := cgroup2Mount(t)
	if (d.Mechanism != termination.CgroupV2 && d.Mechanism != termination.Hybrid) || mount == "" {
		t.Skipf("containers are kept for the next shell only where they are cgroup2 groups; here: %v", d)
	}
	for _, tc := range []struct {
		name         string
		removeBehind bool
	}{
		{"LeftoversCleared", false},
		{"RemovedBehindItsBack", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := open(t, local.Options{Confine: confine.Off()})
			marker := fmt.Sprintf("1000.%d", os.Getpid()%10000)
			t.Cleanup(func() { exec9(t, marker) })
			removed := 0
			for i := range 6 {
				// A command that leaves nothing leaves its container
				// empty, kept for a later shell.
				if res := run(t, env, envs.Command{Shell: "true"}); len(res.Warnings) > 0 {
					t.Fatalf("command %d: warnings %q", i, res.Warnings)
				}
				if tc.removeBehind {
					for _, dir := range emptyRunboxGroups(t, mount) {
						if syscall.Rmdir(dir) == nil {
							removed++
						}
					}
				}
				res := run(t, env, envs.Command{Shell: "sleep " + marker + " >/dev/null 2>&1 & echo " + strconv.Itoa(i)})
				if res.Code != 0 || res.Output != strconv.Itoa(i)+"\n" {
					t.Fatalf("command %d: exit %d, output %q", i, res.Code, res.Output)
				}
				if len(res.Warnings) > 0 || res.LeftoverKilled != 1 {
					t.Fatalf("command %d: warnings %q, %d leftovers killed; want none and 1", i, res.Warnings, res.LeftoverKilled)
				}
				if n := liveWithArg(t, marker); n != 0 {
					t.Fatalf("command %d: %d of its leftovers still running", i, n)
				}
			}
			if tc.removeBehind && removed == 0 {
				t.Fatalf("no kept container was found to remove: the attack did not happen")
			}
		})
	}
}

// exec9 kills what a failed run left running.
func exec9(t *testing.T, arg string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmd, []byte(arg)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
