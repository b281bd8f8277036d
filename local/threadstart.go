package local

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/runbox/runbox/confine"
)

// threadStarts starts pre-started shells confined from a thread of this
// process (confine.Prepared) instead of through the trampoline, which
// would put a program start and the building of the ruleset on every
// shell's start: a warm shell then costs what an unconfined one does,
// plus the thread, its layers and a check that the ruleset is still what
// a fresh build would give (one read while nothing changed), and a new
// build when it is not. When the policy cannot be prepared or enforced
// this way, the shells go back to the trampoline: every shell stays
// confined either way.
type threadStarts struct {
	policy confine.Policy
	off    atomic.Bool // shells start through the trampoline

	mu sync.RWMutex // held for reading by a start under way, for writing to replace pp
	pp *confine.Prepared
}

// usable reports whether shells are to be started from a confined
// thread (t may be nil: they are not).
func (t *threadStarts) usable() bool { return t != nil && !t.off.Load() }

// start runs start on a confined thread, with a ruleset that is current
// (prepared anew when the files it was built from changed). An error
// matching confine.ErrNotEnforced means nothing was started and later
// shells start through the trampoline. report is told of the connects
// the sandbox refuses the shell. gone (never nil) waits for the
// confined thread to end: the shell is handed nothing before (see
// confine.Prepared.Start). intact (never nil) says later whether the
// shell's sandbox still holds what a shell started then would get.
func (t *threadStarts) start(log *slog.Logger, start func() error, report func(confine.Violation)) (gone func() error, intact func() bool, err error) {
	t.mu.RLock()
	seen := t.pp
	if seen != nil && seen.Current() {
		defer t.mu.RUnlock()
		return t.run(log, seen, start, report)
	}
	t.mu.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.off.Load() {
		return noWait, notIntact, fmt.Errorf("local: %w: closed", confine.ErrNotEnforced)
	}
	if t.pp == seen {
		// Nobody prepared it anew meanwhile: this start does.
		if seen != nil {
			seen.Close()
			t.pp = nil
		}
		pp, err := confine.Prepare(t.policy)
		if err != nil {
			t.disable(log, err)
			return noWait, notIntact, fmt.Errorf("local: %w: %w", confine.ErrNotEnforced, err)
		}
		t.pp = pp
		log.Debug("local: sandbox prepared", "anew", seen != nil)
	}
	return t.run(log, t.pp, start, report)
}

func (t *threadStarts) run(log *slog.Logger, pp *confine.Prepared, start func() error, report func(confine.Violation)) (func() error, func() bool, error) {
	gone, intact, err := pp.Start(start, report)
	if errors.Is(err, confine.ErrNotEnforced) {
		t.disable(log, err)
	}
	return gone, intact, err
}

func noWait() error { return nil }

func notIntact() bool { return false }

func (t *threadStarts) disable(log *slog.Logger, err error) {
	if !t.off.Swap(true) {
		log.Debug("local: pre-started shells start through the trampoline", "err", err)
	}
}

// close releases the ruleset; later shells would start through the
// trampoline.
func (t *threadStarts) close() {
	if t == nil {
		return
	}
	t.off.Store(true)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pp != nil {
		t.pp.Close()
		t.pp = nil
	}
}

// inWritable reports whether the program at prog lies where commands under
// p may write (the workspace, a writable path): a shell there is started
// through the trampoline, since what a pre-started shell runs before its
// thread has ended must be nothing a command can change.
func inWritable(p confine.Policy, prog string) bool {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return true
	}
	roots := slices.Clone(p.Writable)
	if p.Profile == confine.ProfileWorkspace {
		roots = append(roots, p.Workspace)
	}
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			r = rr
		}
		if real == r || strings.HasPrefix(real, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// confineWarm prepares xc, a pre-started shell, for its sandbox: nothing
// to do when it starts from a confined thread (threaded), else wrapped in
// the trampoline (with its handover, see confineCmd); refused when the
// sandbox cannot be given. A shell that
// runs under the subreaper always goes through the trampoline: started
// from a confined thread, the subreaper would be in the command's
// sandbox, where the command could kill it and leave its own children to
// escape teardown; through the trampoline, only the shell is. So does a
// shell whose start-up file is one a command could write (there is no
// sealed one, see newWarmPrologue).
func (e *Env) confineWarm(xc *exec.Cmd, underSubreaper bool) (threaded bool, h *confine.Handover, err error) {
	if e.sandbox.refusal == nil && !underSubreaper && e.warmSource != nil && e.sandbox.threads.usable() {
		return true, nil, nil
	}
	h, err = e.confineCmd(xc)
	return false, h, err
}
