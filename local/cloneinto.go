package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/runbox/runbox/internal/launch"
	"github.com/runbox/runbox/termination"
)

// startInto starts xc directly inside cont's cgroup when cont is a cgroup2
// group alone (no v1 limit groups beside it): the kernel forks the child
// there (clone3 with CLONE_INTO_CGROUP), instead of moving it in after it
// started, a migration that costs more than the shell's start itself on
// many kernels. placed is false when xc was started the ordinary way (the
// caller then adds it to cont): the container is of another kind, or the
// kernel lacks the flag, which is then not tried again.
func (e *Env) startInto(xc *exec.Cmd, cont termination.Container) (started *exec.Cmd, placed bool, err error) {
	dir := cgroup2Only(cont)
	if dir == "" || e.noCloneInto.Load() {
		return xc, false, xc.Start()
	}
	fd, err := os.Open(dir)
	if err != nil {
		return xc, false, xc.Start()
	}
	defer fd.Close()
	attr := *xc.SysProcAttr
	attr.UseCgroupFD, attr.CgroupFD = true, int(fd.Fd())
	into := *xc
	into.SysProcAttr = &attr
	if err := into.Start(); err == nil {
		return &into, true, nil
	}
	e.noCloneInto.Store(true)
	return xc, false, xc.Start()
}

// cgroup2Only returns the cgroup2 directory of cont when that directory
// alone is the container, and "" otherwise.
func cgroup2Only(cont termination.Container) string {
	if cont == nil {
		return ""
	}
	if m := cont.Mechanism(); m != termination.CgroupV2 && m != termination.Hybrid {
		return ""
	}
	ref := cont.Ref()
	if len(ref.V1Dirs) > 0 {
		return ""
	}
	return ref.V2Dir
}

// recycle keeps the empty container of a command that ran on a warm shell
// for the next warm shell, instead of removing it and making another: a
// cgroup2 group that the kernel forks children into holds nothing of the
// command that used it once it is empty, except its event counters, so
// one that saw a limit event (or could have) is not kept. It reports
// whether it kept cont; the environment owns it then, and Close removes
// it.
func (e *Env) recycle(cont termination.Container) bool {
	if cgroup2Only(cont) == "" || e.noCloneInto.Load() || cont.LimitEvent() != "" {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.spares) >= warmPoolMax {
		return false
	}
	e.spares = append(e.spares, cont)
	return true
}

// spareContainer hands out a kept container, or nil. A kept group that
// is gone (removed behind runbox's back: an empty cgroup can be) is
// dropped, so the shell gets a new container instead of running outside
// any.
func (e *Env) spareContainer() termination.Container {
	if e.noCloneInto.Load() {
		return nil
	}
	for {
		c := e.popSpare()
		if c == nil || exists(cgroup2Only(c)) {
			return c
		}
		c.Remove(context.Background()) // releases what it holds; a gone group is no error
	}
}

func (e *Env) popSpare() termination.Container {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.spares)
	if n == 0 {
		return nil
	}
	c := e.spares[n-1]
	e.spares[n-1] = nil
	e.spares = e.spares[:n-1]
	return c
}

func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

// placeWarm adds the warm shell pid, blocked before its command, to
// w.cont. When that container has vanished since it was made or kept (an
// empty cgroup removed by someone else), a new one is made and the shell
// placed there: it has run nothing yet, so it is still whole.
func (e *Env) placeWarm(ctx context.Context, w *warmShell, pid int) error {
	err := launch.Place(ctx, w.cont, pid)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	e.log.Debug("local: a warm shell's container vanished; making a new one", "err", err)
	w.cont.Remove(ctx)
	w.cont = nil
	cont, cerr := launch.NewContainer(ctx, e.containerID(), w.limits, termination.WithDetection(e.detection()))
	if cerr != nil {
		return fmt.Errorf("local: %w", cerr)
	}
	w.cont = cont
	return launch.Place(ctx, cont, pid)
}
