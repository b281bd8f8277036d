package termination

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Sentinel errors of [Proc.Signal].
var (
	// ErrRecycled: the PID now belongs to another process (its start time
	// differs from the one recorded). Nothing was signalled.
	ErrRecycled = errors.New("termination: pid recycled")
	// ErrGone: the process no longer exists, or is a zombie. Nothing was signalled.
	ErrGone = errors.New("termination: process gone")
)

// Proc identifies a process by PID and its start time (field 22 of
// /proc/PID/stat, in clock ticks since boot). A PID alone is not an
// identity: once a process is reaped its number can be handed to a new
// one. The pair is, because no two processes with the same PID can start
// in the same tick.
type Proc struct {
	PID       int
	StartTime uint64
}

func (p Proc) String() string { return fmt.Sprintf("%d@%d", p.PID, p.StartTime) }

// Identify reads pid's start time now. It fails with [ErrGone] when there
// is no such process. A zombie is identified all the same (it still owns
// its PID), but [Proc.Alive] reports it dead.
func Identify(pid int) (Proc, error) {
	st, err := readStat(pid)
	if err != nil {
		return Proc{}, err
	}
	return Proc{PID: pid, StartTime: st.start}, nil
}

// Alive reports whether the process still exists with the same start time
// and is not a zombie. A zombie has finished; only its exit status waits
// for its parent, so for teardown it counts as dead.
func (p Proc) Alive() bool {
	st, err := readStat(p.PID)
	return err == nil && st.start == p.StartTime && !st.dead()
}

// Signal sends sig to the process after checking, immediately before,
// that the PID still names the same process. It returns [ErrRecycled]
// when the start time differs and [ErrGone] when the process is gone or a
// zombie; in both cases nothing is signalled. On Linux the check and the
// signal go through one pidfd, so the PID cannot be recycled between them.
func (p Proc) Signal(sig syscall.Signal) error {
	if p.PID <= 0 {
		return fmt.Errorf("termination: signal pid %d: %w", p.PID, ErrGone)
	}
	return signalProc(p, sig)
}

// check verifies that p still names the same, living process.
func (p Proc) check() error {
	st, err := readStat(p.PID)
	switch {
	case err != nil:
		return err
	case st.start != p.StartTime:
		return fmt.Errorf("termination: pid %d started at %d, not %d: %w", p.PID, st.start, p.StartTime, ErrRecycled)
	case st.dead():
		return fmt.Errorf("termination: pid %d is a zombie: %w", p.PID, ErrGone)
	}
	return nil
}

// stat is what teardown needs from /proc/PID/stat.
type stat struct {
	pid   int
	state byte
	ppid  int
	pgid  int
	start uint64
}

// dead reports a zombie (Z) or a dying task (X).
func (s stat) dead() bool { return s.state == 'Z' || s.state == 'X' }

// readStat parses /proc/PID/stat. A missing process is [ErrGone].
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return stat{}, fmt.Errorf("termination: pid %d: %w", pid, ErrGone)
		}
		return stat{}, fmt.Errorf("termination: read stat of pid %d: %w", pid, err)
	}
	return parseStat(pid, b)
}

// parseStat reads fields 3 (state), 4 (ppid), 5 (pgrp) and 22 (starttime).
// The command name (field 2) is in parentheses and may itself contain
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(pid int, b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return stat{}, fmt.Errorf("termination: malformed stat of pid %d", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("termination: malformed stat of pid %d", pid)
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return stat{}, fmt.Errorf("termination: malformed stat of pid %d: %w", pid, err)
	}
	return stat{pid: pid, state: f[0][0], ppid: ppid, pgid: pgid, start: start}, nil
}

// snapshot reads the stat of every process in /proc. Processes that exit
// while it reads are skipped.
func snapshot() ([]stat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("termination: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("termination: list /proc: %w", err)
	}
	out := make([]stat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		out = append(out, st)
	}
	return out, nil
}

// Descendants returns a snapshot of every descendant of root (children,
// their children, ...) read from /proc, each with its start time. It does
// not include root. A process that has already been reparented away from
// the tree (to init or a subreaper) is no longer a descendant and is not
// found; see the package documentation.
func Descendants(root int) ([]Proc, error) {
	all, err := snapshot()
	if err != nil {
		return nil, err
	}
	st, err := readStat(root)
	if err != nil {
		return nil, err
	}
	seeds := map[int]uint64{root: st.start}
	return descendantsOf(all, seeds), nil
}

// descendantsOf walks all from seeds (pid → start time). A seed whose PID
// now names another process contributes nothing: its "children" are a
// stranger's.
func descendantsOf(all []stat, seeds map[int]uint64) []Proc {
	children := make(map[int][]stat, len(all))
	byPID := make(map[int]stat, len(all))
	for _, s := range all {
		children[s.ppid] = append(children[s.ppid], s)
		byPID[s.pid] = s
	}
	var out []Proc
	seen := map[int]bool{}
	var queue []int
	for pid, start := range seeds {
		if s, ok := byPID[pid]; ok && s.start == start {
			queue = append(queue, pid)
			seen[pid] = true
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if seen[c.pid] {
				continue
			}
			seen[c.pid] = true
			if _, isSeed := seeds[c.pid]; !isSeed {
				out = append(out, Proc{PID: c.pid, StartTime: c.start})
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}
