package launch

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/runbox/runbox/termination"
)

// BarrierFD is the file descriptor on which a held child finds its barrier:
// the first of exec.Cmd.ExtraFiles.
const BarrierFD = 3

// ExitBarrierClosed is the exit code of a held child whose barrier was closed
// without being opened: it ran nothing of its user's.
const ExitBarrierClosed = 125

// holdScript waits at the barrier on fd [BarrierFD], closes it, and execs its
// arguments. It exits [ExitBarrierClosed] when the barrier closes unopened.
func holdScript() string {
	return fmt.Sprintf(`IFS= read -r _ <&%[1]d || exit %[2]d; exec %[1]d<&-; exec "$@"`, BarrierFD, ExitBarrierClosed)
}

// HoldShell is the shell [HoldArgv] runs the wait in: /bin/sh, which
// POSIX systems have.
const HoldShell = "/bin/sh"

// HoldArgv is the argv that runs path (as argv[0], with argv[1:]) once
// its barrier, inherited at [BarrierFD], opens. The waiter execs the program,
// so the PID the parent started is the program's own. argv[0] is not
// kept: a shell cannot exec a program under another name.
func HoldArgv(path string, argv []string) []string {
	return append([]string{HoldShell, "-c", holdScript(), "runbox", path}, argv[1:]...)
}

// A Barrier holds a child at its start until its parent has placed it. Its
// zero value is not usable; make one with [NewBarrier], hand [Barrier.File] to
// the child at [BarrierFD], call [Barrier.Started] once the child has been
// started, and then exactly one of [Barrier.Admit], [Barrier.Open] or
// [Barrier.Close]. Close is safe to call again (deferred) after any of them.
type Barrier struct {
	r, w *os.File
}

// NewBarrier makes a barrier.
func NewBarrier() (*Barrier, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("launch: barrier pipe: %w", err)
	}
	return &Barrier{r: r, w: w}, nil
}

// File is the child's end of the barrier, for exec.Cmd.ExtraFiles.
func (g *Barrier) File() *os.File { return g.r }

// Started closes the parent's copy of the child's end, so that the
// child alone holds it.
func (g *Barrier) Started() {
	if g.r != nil {
		g.r.Close()
		g.r = nil
	}
}

// Open lets the child run.
func (g *Barrier) Open() error {
	if g.w == nil {
		return errors.New("launch: barrier already closed")
	}
	_, err := g.w.Write([]byte("go\n"))
	g.Close()
	if err != nil {
		return fmt.Errorf("launch: open the barrier: %w", err)
	}
	return nil
}

// Close shuts the barrier; if it was not opened, the child exits
// [ExitBarrierClosed] without running anything.
func (g *Barrier) Close() {
	g.Started()
	if g.w != nil {
		g.w.Close()
		g.w = nil
	}
}

// Admit places the started child pid in cont and then opens the barrier.
// A nil cont only opens the barrier. When the placement fails the error
// matches [ErrNotContained]; then, with required (the command asked for
// limits, or must be contained), the barrier is closed unopened and the
// child exits [ExitBarrierClosed] having run nothing; without it the barrier
// is opened anyway and the child runs in its process group only — the
// error is the caller's warning to report.
func (g *Barrier) Admit(ctx context.Context, cont termination.Container, pid int, required bool) error {
	if cont == nil {
		return g.Open()
	}
	perr := Place(ctx, cont, pid)
	if perr != nil && required {
		g.Close()
		return perr
	}
	if err := g.Open(); err != nil {
		return errors.Join(perr, err)
	}
	return perr
}
