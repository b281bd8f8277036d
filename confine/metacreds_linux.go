package confine

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ident is a process's file-system identity: what the kernel checks a
// metadata call against.
type ident struct {
	uid, gid int
	groups   []int
}

// identOf is the file-system identity of process pid.
func identOf(pid int) (ident, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ident{}, fmt.Errorf("confine: identity of %d: %w", pid, err)
	}
	var id ident
	found := 0
	for line := range strings.Lines(string(b)) {
		key, val, _ := strings.Cut(line, ":")
		f := strings.Fields(val)
		switch {
		case (key == "Uid" || key == "Gid") && len(f) == 4:
			// real, effective, saved, file system
			v, err := strconv.Atoi(f[3])
			if err != nil {
				return ident{}, fmt.Errorf("confine: identity of %d: %s: %w", pid, key, err)
			}
			if key == "Uid" {
				id.uid = v
			} else {
				id.gid = v
			}
			found++
		case key == "Groups":
			for _, g := range f {
				v, err := strconv.Atoi(g)
				if err != nil {
					return ident{}, fmt.Errorf("confine: identity of %d: groups: %w", pid, err)
				}
				id.groups = append(id.groups, v)
			}
		}
	}
	if found != 2 {
		return ident{}, fmt.Errorf("confine: identity of %d: no Uid or Gid line", pid)
	}
	return id, nil
}

// mine reports whether id is this thread's identity, with no
// capability effective: acting here is then acting as the program.
func (id ident) mine() bool {
	if id.uid != unix.Geteuid() || id.gid != unix.Getegid() {
		return false
	}
	groups, err := unix.Getgroups()
	if err != nil || !sameSet(groups, id.groups) {
		return false
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capget(&hdr, &data[0]) == nil && data[0].Effective|data[1].Effective == 0
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// assume makes id the calling thread's file-system identity and drops
// its capabilities. Each step is the thread's own system call (the
// runtime's setgroups would change every thread).
func (id ident) assume() error {
	if err := unix.Setgroups(id.groups); err != nil {
		return fmt.Errorf("confine: groups: %w", err)
	}
	unix.Setfsgid(id.gid)
	unix.Setfsuid(id.uid)
	// setfsuid and setfsgid say nothing on failure: asking for an
	// invalid id returns the current one.
	if u, _ := unix.SetfsuidRetUid(-1); u != id.uid {
		return fmt.Errorf("confine: fsuid %d, not %d", u, id.uid)
	}
	if g, _ := unix.SetfsgidRetGid(-1); g != id.gid {
		return fmt.Errorf("confine: fsgid %d, not %d", g, id.gid)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("confine: dropping capabilities: %w", err)
	}
	return nil
}

// callers is the file-system identity of the programs of one listener,
// read from the first of them that makes a metadata call. It is the same
// for all of them: they descend from one confined command under
// no_new_privs and without capabilities, so none can take another
// identity (no set-ID program grants one; setuid, setgroups and setfsuid
// only move between the ids it already has, which runbox starts equal).
// Reading /proc/PID/status for every call cost more than the call.
type callers struct {
	read bool
	id   ident
	err  error
	mine bool        // id is this thread's, with no capability
	work chan func() // to the thread that took id; nil until one is needed
}

// asCaller runs op as process pid would: here when this thread already
// has its identity and no capability (runbox run by the program's own
// user), else on a thread of its own that took the program's identity
// for good (runbox as root). It fails with EPERM when the identity cannot
// be read or taken. Calls are made one at a time (the listener's
// goroutine), so cs needs no lock.
func (cs *callers) asCaller(pid int, op func() unix.Errno) unix.Errno {
	if !cs.read {
		cs.id, cs.err = identOf(pid)
		cs.mine = cs.err == nil && cs.id.mine()
		cs.read = true
	}
	if cs.err == nil && !cs.mine && cs.work == nil {
		cs.err = cs.start()
	}
	if cs.err != nil {
		return unix.EPERM
	}
	if cs.mine {
		return op()
	}
	res := make(chan unix.Errno, 1)
	cs.work <- func() { res <- op() }
	return <-res
}

// start starts the thread that takes the programs' identity and makes
// their calls until close.
func (cs *callers) start() error {
	work, ready := make(chan func()), make(chan error, 1)
	go func(id ident) {
		// Never unlocked: the runtime ends the thread with this
		// goroutine, so no other goroutine runs with its identity.
		runtime.LockOSThread()
		if err := id.assume(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for op := range work {
			op()
		}
	}(cs.id)
	if err := <-ready; err != nil {
		return err
	}
	cs.work = work
	return nil
}

// close ends the thread start started, if any.
func (cs *callers) close() {
	if cs.work != nil {
		close(cs.work)
		cs.work = nil
	}
}
