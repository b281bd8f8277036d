package procregistry

import (
	"context"
	"errors"
	"syscall"

	"github.com/runbox/runbox/termination"
)

// supervisorTree is a [termination.Container] made of a live supervisor's
// descendants: with the supervisor as subreaper, that is the command's
// tree plus every orphan it left. It creates and removes nothing.
type supervisorTree struct {
	sup termination.Proc
}

var _ termination.Container = supervisorTree{}

func (t supervisorTree) Mechanism() termination.Mechanism { return termination.ProcessGroup }

func (t supervisorTree) Add(context.Context, int) error {
	return errors.New("procregistry: a supervisor's tree takes no members")
}

func (t supervisorTree) procs() []termination.Proc {
	if !t.sup.Alive() {
		return nil
	}
	ps, _ := termination.Descendants(t.sup.PID)
	return ps
}

func (t supervisorTree) Procs() ([]int, error) {
	var pids []int
	for _, p := range t.procs() {
		pids = append(pids, p.PID)
	}
	return pids, nil
}

func (t supervisorTree) Empty() (bool, error) { return len(t.procs()) == 0, nil }

// Kill SIGKILLs every descendant, each checked against its start time.
func (t supervisorTree) Kill(context.Context) error {
	var errs []error
	for _, p := range t.procs() {
		if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, termination.ErrGone) && !errors.Is(err, termination.ErrRecycled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t supervisorTree) Remove(context.Context) error { return nil }
func (t supervisorTree) LimitEvent() string           { return "" }
func (t supervisorTree) Ref() termination.ContainerRef {
	return termination.ContainerRef{Mechanism: termination.ProcessGroup}
}
