package procregistry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/runbox/runbox/internal/jobdir"
)

// hostStartWait bounds the start of the supervisor host.
const hostStartWait = 30 * time.Second

// ensureHost starts the state directory's supervisor host unless one
// runs (see "How a job runs"). It is started directly, not through the
// environment: it is the registry's own machinery, and gets this
// process's environment, never a job's. A failure is only logged: the
// job's first stage, finding no host, supervises the job in a process of
// its own.
func (r *Registry) ensureHost(ctx context.Context) {
	r.hostMu.Lock()
	defer r.hostMu.Unlock()
	if hostRunning(r.opts.Dir) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostStartWait)
	defer cancel()
	argv := append(slices.Clone(r.opts.Supervisor), "-host", r.opts.Dir)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.Output()
	if err != nil {
		r.log.Warn("procregistry: the supervisor host did not start; jobs get supervisors of their own",
			"err", err, "out", strings.TrimSpace(string(out)))
	}
}

// hostRunning reports whether a supervisor host holds the lock of the
// state directory's host directory.
func hostRunning(state string) bool {
	f, err := openPrivateFile(filepath.Join(state, jobdir.HostDir, jobdir.HostLock), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// hostGonePoll is how often WaitHostGone looks.
const hostGonePoll = 20 * time.Millisecond

// WaitHostGone waits until no supervisor host serves the state directory,
// or ctx ends. A host exits by itself a moment after its last job ended;
// this is for whoever removes a state directory and wants nothing of it
// left running (a benchmark's cleanup, a test's).
func (r *Registry) WaitHostGone(ctx context.Context) error {
	for hostRunning(r.opts.Dir) {
		if err := pause(ctx, hostGonePoll); err != nil {
			return fmt.Errorf("procregistry: wait for the supervisor host: %w", err)
		}
	}
	return nil
}
