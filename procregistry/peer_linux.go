package procregistry

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerProc is one process of a peer's ancestry, from /proc/PID/stat.
type peerProc struct {
	pid, ppid, pgid int
	start           uint64
}

// cgroupLine is one line of /proc/PID/cgroup: the controllers of a
// hierarchy ("" for cgroup2) and the process's path in it.
type cgroupLine struct {
	controllers []string
	path        string
}

// maxAncestry bounds the walk up a peer's parents.
const maxAncestry = 256

// peerPID returns the PID of c's peer, as the kernel recorded it when the
// peer connected (SO_PEERCRED).
func peerPID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("procregistry: not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("procregistry: peer: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("procregistry: peer: %w", err)
	}
	if cerr != nil {
		return 0, fmt.Errorf("procregistry: peer: %w", cerr)
	}
	return int(cred.Pid), nil
}

// ancestry returns pid and its ancestors, nearest first, up to (not
// including) PID 1. It fails when pid itself cannot be read: a peer that
// is gone cannot be placed, and is refused.
func ancestry(pid int) ([]peerProc, error) {
	var out []peerProc
	for pid > 1 && len(out) < maxAncestry {
		p, err := readPeerStat(pid)
		if err != nil {
			if len(out) == 0 {
				return nil, err
			}
			break // an ancestor exited meanwhile: the chain ends here
		}
		out = append(out, p)
		pid = p.ppid
	}
	return out, nil
}

// readPeerStat reads fields 4 (ppid), 5 (pgrp) and 22 (starttime) of
// /proc/PID/stat, counted from the last ')' (the name may hold spaces).
func readPeerStat(pid int) (peerProc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return peerProc{}, fmt.Errorf("procregistry: peer %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return peerProc{}, fmt.Errorf("procregistry: peer %d: malformed stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return peerProc{}, fmt.Errorf("procregistry: peer %d: malformed stat", pid)
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return peerProc{}, fmt.Errorf("procregistry: peer %d: malformed stat", pid)
	}
	return peerProc{pid: pid, ppid: ppid, pgid: pgid, start: start}, nil
}

// cgroupsOf reads /proc/PID/cgroup; a host without cgroups yields none.
func cgroupsOf(pid int) []cgroupLine {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	var out []cgroupLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		l := cgroupLine{path: parts[2]}
		if parts[1] != "" {
			l.controllers = strings.Split(parts[1], ",")
		}
		out = append(out, l)
	}
	return out
}

// inContainer reports whether pid is a member of the cgroup directory v2
// (cgroup2) or of one of v1 (by hierarchy). A directory is a candidate
// only when it ends with the process's path in that hierarchy; the
// candidate's cgroup.procs then decides, so a cgroup elsewhere with the
// same tail does not pass.
func inContainer(pid int, lines []cgroupLine, v2 string, v1 map[string]string) bool {
	for _, l := range lines {
		if l.path == "" || l.path == "/" {
			continue
		}
		var dirs []string
		if len(l.controllers) == 0 {
			dirs = append(dirs, v2)
		}
		for _, c := range l.controllers {
			dirs = append(dirs, v1[c])
		}
		for _, d := range dirs {
			if d != "" && strings.HasSuffix(filepath.Clean(d), filepath.Clean(l.path)) && memberOf(d, pid) {
				return true
			}
		}
	}
	return false
}

func memberOf(dir string, pid int) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	want := strconv.Itoa(pid)
	for _, l := range strings.Split(string(b), "\n") {
		if l == want {
			return true
		}
	}
	return false
}
