package supervisor

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/runbox/runbox/termination"
)

// leftoverBound bounds the teardown of what a command left running (its
// grace aside): a teardown that hangs must not keep the exit unrecorded.
const leftoverBound = 30 * time.Second

// clearLeftovers kills what the job's command left running when it ended
// (children that called setsid, nohup'd ones, ones that ignore SIGTERM),
// as a foreground command's are: a job ends whole. Its container names
// them; without one, this process, their subreaper, does (they are its
// descendants). They get the job's grace after SIGTERM, then SIGKILL. It
// returns how many there were. It runs before exit.json is written, so a
// job reported ended has nothing left running.
func (s *supervisor) clearLeftovers() int {
	var c termination.Container
	switch {
	case s.cont != nil:
		c = s.cont
	case s.subreaper:
		c = ownTree{}
	default:
		return 0 // a process group only: what left it is not ours to name
	}
	procs, err := c.Procs()
	if err != nil || len(procs) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.grace*2+leftoverBound)
	defer cancel()
	if err := termination.KillTree(ctx, termination.Proc{}, termination.Options{Grace: s.grace, Container: c}); err != nil {
		s.logf("killing what the command left running: %v", err)
	}
	return len(procs)
}

// ownTree is a [termination.Container] made of this process's
// descendants: for a per-job supervisor that is its job's subreaper, the
// job's tree with every orphan it left. It creates and removes nothing.
type ownTree struct{}

var _ termination.Container = ownTree{}

func (ownTree) Mechanism() termination.Mechanism { return termination.ProcessGroup }

func (ownTree) Add(context.Context, int) error {
	return errors.New("supervisor: a supervisor's tree takes no members")
}

func (ownTree) procs() []termination.Proc {
	ps, _ := termination.Descendants(os.Getpid())
	return ps
}

func (t ownTree) Procs() ([]int, error) {
	var pids []int
	for _, p := range t.procs() {
		pids = append(pids, p.PID)
	}
	return pids, nil
}

func (t ownTree) Empty() (bool, error) { return len(t.procs()) == 0, nil }

// Kill SIGKILLs every descendant, each checked against its start time.
func (t ownTree) Kill(context.Context) error {
	var errs []error
	for _, p := range t.procs() {
		if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, termination.ErrGone) && !errors.Is(err, termination.ErrRecycled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (ownTree) Remove(context.Context) error { return nil }
func (ownTree) LimitEvent() string           { return "" }
func (ownTree) Ref() termination.ContainerRef {
	return termination.ContainerRef{Mechanism: termination.ProcessGroup}
}
