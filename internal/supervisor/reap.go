package supervisor

import (
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Where no cgroup or scope can be made (a container without cgroup
// access, say), the supervisor makes itself the subreaper of its job: a
// child that double-forks and calls setsid is then reparented to the
// supervisor rather than to init, so it stays a descendant that /proc can
// name, and a kill finds it through [supervisorTree]. The supervisor is a
// process of its own per job, so the process-wide setting touches nothing
// else; it reaps those orphans itself, on SIGCHLD (the wrapper's status is
// left to its Wait, the command's to the wrapper).

// reapOrphans reaps adopted orphans — every child but those in keep —
// each time a child dies, until stop is closed; the returned channel is
// closed when it has ended. It waits for SIGCHLD, never on a timer: a job
// whose processes are idle costs its supervisor no wakeup at all.
func reapOrphans(keep []int, stop <-chan struct{}) <-chan struct{} {
	return onSIGCHLD(stop, nil, func() { reapDead(keep) }, true)
}

// onSIGCHLD calls reap at once and again after every SIGCHLD (or kick)
// until stop is closed, and once more then when last is set; the
// returned channel is closed when it has ended. SIGCHLD is registered
// before the first call, so no death between the two is missed: a
// signal that comes meanwhile leaves the channel ready.
func onSIGCHLD(stop, kick <-chan struct{}, reap func(), last bool) <-chan struct{} {
	done := make(chan struct{})
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go func() {
		defer close(done)
		defer signal.Stop(chld)
		for {
			reap()
			select {
			case <-stop:
				if last {
					reap()
				}
				return
			case <-chld:
			case <-kick:
			}
		}
	}()
	return done
}

// reapDead collects the exit of every dead child not in keep.
func reapDead(keep []int) {
	for _, pid := range ownChildren() {
		if slices.Contains(keep, pid) {
			continue
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// ownChildren lists this process's children from /proc.
func ownChildren() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}
