package verceltest

import (
	"sync"
	"syscall"
	"time"
)

// basePath is the PATH of a fresh sandbox.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// session is one run of a sandbox: its commands and PTY processes, until
// it is stopped or times out.
type session struct {
	srv       *Server
	sb        *sandbox
	id        string
	dir       string // the sandbox's directory for this session
	requested int64
	done      chan struct{} // closed when it stops

	mu      sync.Mutex
	st      string
	stopped int64
	timeout int64 // ms
	timer   *time.Timer
	cmds    map[string]*command
	groups  map[int]struct{} // process groups of PTY processes
}

// newSession makes a running session of sb; the caller holds sb.mu.
func newSession(s *Server, sb *sandbox) *session {
	now := time.Now().UnixMilli()
	ss := &session{srv: s, sb: sb, id: randomID("sess_"), dir: sb.dir, requested: now, done: make(chan struct{}),
		st: "running", timeout: sb.timeout, cmds: map[string]*command{}, groups: map[int]struct{}{}}
	ss.timer = time.AfterFunc(time.Duration(ss.timeout)*time.Millisecond, func() { ss.stop("stopped") })
	return ss
}

func (ss *session) status() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.st
}

// extend adds ms to the session's timeout.
func (ss *session) extend(ms int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != "running" {
		return
	}
	ss.timeout += ms
	left := time.Until(time.UnixMilli(ss.requested).Add(time.Duration(ss.timeout) * time.Millisecond))
	ss.timer.Reset(max(left, 0))
}

// stop ends the session: every command and PTY process group is killed;
// their streams end with a sandbox_stopped error.
func (ss *session) stop(status string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != "running" {
		return
	}
	ss.st, ss.stopped = status, time.Now().UnixMilli()
	ss.timer.Stop()
	close(ss.done)
	for _, c := range ss.cmds {
		c.killGroup(syscall.SIGKILL, true)
	}
	for pg := range ss.groups {
		killTree(pg)
	}
}

func (ss *session) json() map[string]any {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m := map[string]any{
		"id": ss.id, "memory": 2048 * ss.sb.vcpus, "vcpus": ss.sb.vcpus, "region": "iad1", "runtime": ss.sb.runtime,
		"timeout": ss.timeout, "status": ss.st, "requestedAt": ss.requested, "startedAt": ss.requested,
		"createdAt": ss.requested, "updatedAt": max(ss.requested, ss.stopped), "cwd": ss.dir,
	}
	if ss.stopped != 0 {
		m["stoppedAt"] = ss.stopped
	}
	return m
}

// addGroup registers a PTY process group, refusing when stopped.
func (ss *session) addGroup(pg int) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != "running" {
		return false
	}
	ss.groups[pg] = struct{}{}
	return true
}

func (ss *session) removeGroup(pg int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.groups, pg)
}

// env is a process's environment: the sandbox's base, its default
// variables, then the call's.
func (ss *session) env(extra map[string]string) []string {
	m := map[string]string{"PATH": basePath, "HOME": ss.dir}
	for k, v := range ss.sb.env {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}
