package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Exit statuses of the trampoline when it cannot run the program: the
// shell's conventions for "cannot execute" and "not found".
const (
	exitCannot   = 126
	exitNotFound = 127
)

// Main is the trampoline: it runs with the arguments after [Command]
// (the policy as JSON, the program's path and its argv), applies every
// layer of the policy to its own thread and executes the program in its
// place. On any failure it prints the reason to stderr and exits 126 (127
// when the program does not exist) without running the program: a
// command never runs less confined than it asked.
func Main(args []string) int {
	err := trampoline(args)
	fmt.Fprintf(os.Stderr, "runbox: sandbox: %v\n", err)
	if errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannot
}

// trampoline returns only on failure.
func trampoline(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: %s POLICY PATH ARGV0 [ARG...]", Command)
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fmt.Errorf("confine: decoding the policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	path, argv := args[1], args[2:]
	// The handover is the trampoline's, never the program's.
	server := os.Getenv(ServerEnv)
	os.Unsetenv(ServerEnv)
	// Every layer below is a property of the calling thread, and execve
	// keeps the thread that calls it: the goroutine must stay on this one
	// thread from the first layer to the exec (and is never unlocked).
	runtime.LockOSThread()
	if p.Profile != ProfileOff {
		// Without a server, Landlock alone decides connects, and unix
		// sockets are not policed (see Handover).
		handover := dialServer(server)
		if err := apply(p, handover); err != nil {
			return err
		}
	}
	for k, v := range p.Env {
		os.Setenv(k, v)
	}
	err := syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("confine: executing %s: %w", path, err)
}

// apply confines the calling thread: first what needs privileges (the
// mount namespace), then the capabilities go, then no_new_privs, Landlock
// and seccomp. When server is not nil it is handed the filter's listener
// (and closed).
func apply(p Policy, server *os.File) error {
	if server != nil {
		defer server.Close()
	}
	r, err := prepare(p, nil)
	if err != nil {
		return err
	}
	defer r.close()
	listener, err := r.enforce(server != nil, -1)
	if err != nil || listener < 0 {
		return err
	}
	return handOver(server, listener)
}

// ready is a policy made ready to enforce: its Landlock ruleset built and
// its seccomp program assembled. One ready may be enforced on any number
// of threads, each becoming a Landlock domain of its own.
type ready struct {
	p       Policy
	ruleset int // the Landlock ruleset's descriptor (close-on-exec)
	flags   uint32
	seccomp []unix.SockFilter
	// notify is the filter that sends connect and listen to a listener.
	notify  []unix.SockFilter
	lastCap int
	// unix is the policy's unix-socket rules, built by Prepare once for
	// every program it starts (the trampoline hands its listener over
	// and never decides a connect itself).
	unix unixRules
}

// prepare builds what enforcing p takes, recording in w (when not nil)
// what the file rules were built from. It changes nothing in this
// process.
func prepare(p Policy, w *watch) (*ready, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return nil, fmt.Errorf("confine: the kernel has no Landlock (%v): choose `sandbox: off` to run unconfined", err)
	}
	if p.network() == NetworkAllowlist && abi < 4 {
		return nil, fmt.Errorf("confine: network allowlist needs Landlock ABI 4 (the kernel has %d): choose `network: open` or `sandbox: off`", abi)
	}
	if fi, err := w.stat(p.Workspace); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("confine: workspace %s is not a directory (%v)", p.Workspace, err)
	}
	last, err := lastCap()
	if err != nil {
		return nil, err
	}
	prog, err := seccompProgram(p.network(), false, false)
	if err != nil {
		return nil, err
	}
	// Without the read-only mount layer, metadata calls are decided by
	// the listener (metadata_linux.go).
	notify, err := seccompProgram(p.network(), true, !mountLayer())
	if err != nil {
		return nil, err
	}
	cfg := landlockConfig(abi, p.network() == NetworkAllowlist)
	grants, err := fileGrants(p, w)
	if err != nil {
		return nil, err
	}
	ruleset := rules(grants, cfg.HandledAccessFS)
	if p.network() == NetworkAllowlist {
		for _, port := range p.connectPorts() {
			ruleset = append(ruleset, landlock.ConnectTCP(uint16(port)))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(ruleset...)
	if err != nil {
		return nil, fmt.Errorf("confine: building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("confine: Landlock refused the ruleset: choose `sandbox: off` to run unconfined")
	}
	return &ready{p: p, ruleset: fd, flags: flags, seccomp: prog, notify: notify, lastCap: last}, nil
}

// enforce confines the calling thread, which must be locked to its
// goroutine and never unlocked: first what needs privileges (the mount
// namespace), then the capabilities go, then no_new_privs, Landlock and
// seccomp. Every layer is a property of the thread, inherited by what it
// starts or executes. The thread joins the mount namespace mounts (from
// sharedMounts), or, with -1, builds one of its own. With serve it
// returns the seccomp listener the caller is to serve (serveListener)
// for the programs the thread starts; else -1.
func (r *ready) enforce(serve bool, mounts int) (listener int, err error) {
	if mounts >= 0 {
		err = enterMounts(mounts)
	} else {
		err = privateMounts(r.p)
	}
	if err != nil {
		return -1, err
	}
	if err := dropCapabilities(r.lastCap); err != nil {
		return -1, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("confine: no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(r.ruleset, r.flags); err != nil {
		return -1, fmt.Errorf("confine: enforcing Landlock: %w", err)
	}
	if serve && r.notify != nil {
		listener, err := loadSeccomp(r.notify, true)
		if err == nil {
			return listener, nil
		}
		// EBUSY: a filter above this one has a listener already
		// (runbox in a runbox sandbox), and a thread may have only
		// one; any other refusal, a kernel without listeners: this
		// sandbox does without (Landlock alone decides connects).
	}
	return loadSeccomp(r.seccomp, false)
}

func (r *ready) close() { unix.Close(r.ruleset) }

// landlockConfig is the strongest configuration the kernel's ABI gives:
// every file right it knows, TCP connect when the network is an
// allowlist (bind stays free, so a command can serve on loopback), the
// signal and abstract-socket scopes from ABI 6, and audit records of the
// executed program's denials from ABI 7.
func landlockConfig(abi int, net bool) landlock.Config {
	presets := []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	cfg := presets[min(abi, len(presets)-1)]
	c := landlock.Config{HandledAccessFS: cfg.HandledAccessFS, Scoped: cfg.Scoped}
	if net {
		c.HandledAccessNet = ll.AccessNetConnectTCP
	}
	return c.EnableLoggingForSubprocesses().BestEffort()
}
